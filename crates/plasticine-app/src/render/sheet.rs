//! A contact sheet: the frames of a render, shrunk and tiled into one
//! image, so a bake can be looked at at a glance.

use super::capture::RgbaImage;

/// The widest a contact sheet gets (pixels).
pub const SHEET_WIDTH: u32 = 2048;

/// Frames tiled row by row, left to right, into a grid about as wide as it
/// is tall, each shrunk by a whole factor (a box filter) to fit
/// `SHEET_WIDTH`. Frames are added one at a time, so only the shrunk
/// tiles are kept.
pub struct ContactSheet {
    columns: u32,
    factor: u32,
    tiles: Vec<RgbaImage>,
}

impl ContactSheet {
    /// A sheet for `frames` frames of `size` pixels each.
    pub fn new(frames: usize, size: (u32, u32)) -> Self {
        let columns = (frames.max(1) as f64).sqrt().ceil() as u32;
        let factor = (columns * size.0).div_ceil(SHEET_WIDTH).max(1);
        Self {
            columns,
            factor,
            tiles: Vec::new(),
        }
    }

    /// Shrinks `frame` and keeps it as the next tile.
    pub fn add(&mut self, frame: &RgbaImage) {
        self.tiles.push(shrink(frame, self.factor));
    }

    /// The sheet: the tiles on a black ground; None without tiles.
    pub fn image(&self) -> Option<RgbaImage> {
        let first = self.tiles.first()?;
        let (tw, th) = (first.width, first.height);
        let rows = (self.tiles.len() as u32).div_ceil(self.columns);
        let (width, height) = (self.columns * tw, rows * th);
        let mut pixels: Vec<u8> = (0..width * height).flat_map(|_| [0, 0, 0, 255]).collect();
        for (k, tile) in self.tiles.iter().enumerate() {
            let (cx, cy) = (k as u32 % self.columns * tw, k as u32 / self.columns * th);
            for y in 0..tile.height.min(th) {
                let row = tile.width.min(tw) as usize * 4;
                let from = (y * tile.width) as usize * 4;
                let to = (((cy + y) * width + cx) * 4) as usize;
                pixels[to..to + row].copy_from_slice(&tile.pixels[from..from + row]);
            }
            // Opaque, whatever the frame's alpha.
            for y in cy..cy + th {
                for x in cx..cx + tw {
                    pixels[((y * width + x) * 4 + 3) as usize] = 255;
                }
            }
        }
        Some(RgbaImage {
            width,
            height,
            pixels,
        })
    }
}

/// `image` shrunk by a whole `factor`: each pixel the mean of a factor ×
/// factor block (the ragged right and bottom edges dropped).
fn shrink(image: &RgbaImage, factor: u32) -> RgbaImage {
    let f = factor.max(1);
    let (width, height) = ((image.width / f).max(1), (image.height / f).max(1));
    let mut pixels = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height {
        for x in 0..width {
            let mut sum = [0u32; 4];
            let mut n = 0;
            for dy in 0..f {
                for dx in 0..f {
                    let (sx, sy) = (x * f + dx, y * f + dy);
                    if sx < image.width && sy < image.height {
                        let p = image.pixel(sx, sy);
                        for c in 0..4 {
                            sum[c] += u32::from(p[c]);
                        }
                        n += 1;
                    }
                }
            }
            pixels.extend(sum.map(|s| (s / n.max(1)) as u8));
        }
    }
    RgbaImage {
        width,
        height,
        pixels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(width: u32, height: u32, rgb: [u8; 3]) -> RgbaImage {
        RgbaImage {
            width,
            height,
            pixels: (0..width * height)
                .flat_map(|_| [rgb[0], rgb[1], rgb[2], 255])
                .collect(),
        }
    }

    /// Five 1920×1080 frames tile three across, two down, each shrunk by 3
    /// to fit 2048 px (640×360), in order; the empty sixth cell is black.
    #[test]
    fn frames_tile_in_order_and_fit_the_width() {
        let mut sheet = ContactSheet::new(5, (1920, 1080));
        for k in 0..5u8 {
            sheet.add(&flat(1920, 1080, [40 * k, 10, 200]));
        }
        let img = sheet.image().unwrap();
        assert_eq!((img.width, img.height), (3 * 640, 2 * 360));
        assert!(img.width <= SHEET_WIDTH);
        for k in 0..5u32 {
            let (x, y) = (k % 3 * 640 + 320, k / 3 * 360 + 180);
            assert_eq!(img.pixel(x, y), [40 * k as u8, 10, 200, 255], "tile {k}");
        }
        assert_eq!(img.pixel(2 * 640 + 5, 360 + 5), [0, 0, 0, 255]);
    }

    /// Shrinking averages each block: a 2×2 checkerboard of 0 and 200
    /// becomes 100.
    #[test]
    fn shrinking_averages_blocks() {
        let mut img = flat(4, 4, [0, 0, 0]);
        for y in 0..4u32 {
            for x in 0..4u32 {
                if (x + y) % 2 == 0 {
                    let i = ((y * 4 + x) * 4) as usize;
                    img.pixels[i..i + 3].copy_from_slice(&[200, 200, 200]);
                }
            }
        }
        let small = shrink(&img, 2);
        assert_eq!((small.width, small.height), (2, 2));
        assert!(small.pixels.chunks(4).all(|p| p == [100, 100, 100, 255]));
    }
}
