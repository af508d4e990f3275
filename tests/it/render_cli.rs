//! `plasticine render` as a user runs it: real files, the real binary, a
//! real (software) GPU.

use std::path::Path;
use std::process::Command;

fn plasticine(args: &[&str]) -> (bool, String, String) {
    // As on a machine with no desktop session (ssh, CI, a render farm): no
    // runtime directory, so no Wayland to find.
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Decodes a PNG: its width, height and RGBA bytes.
fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    (info.width, info.height, buf)
}

/// Decodes a PNG and counts pixels that differ clearly from the background
/// in the left and right halves.
fn lit_halves(path: &Path) -> (u32, u32, (u32, u32)) {
    let (w, h, buf) = read_png(path);
    let bg = &buf[0..3];
    let (mut left, mut right) = (0, 0);
    for y in 0..h {
        for x in 0..w {
            let i = ((y * w + x) * 4) as usize;
            let d: i32 = (0..3)
                .map(|c| (buf[i + c] as i32 - bg[c] as i32).abs())
                .sum();
            // The penguin's skin is far brighter than the dark sky in the corner.
            if d > 150 {
                if x < w / 2 { left += 1 } else { right += 1 }
            }
        }
    }
    (left, right, (w, h))
}

#[test]
fn render_of_a_bake_writes_stereo_images_with_the_character_in_each_eye() {
    let dir = tempfile::tempdir().unwrap();
    let bake = dir.path().join("bake");
    let (ok, _, stderr) = plasticine(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        bake.to_str().unwrap(),
        "--duration",
        "0.2",
    ]);
    assert!(ok, "{stderr}");
    let frames = dir.path().join("frames");
    let (ok, stdout, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--baked",
        bake.join("bake.plcache").to_str().unwrap(),
        "--out",
        frames.to_str().unwrap(),
        "--size",
        "160x90",
        "--every",
        "3",
        "--frames",
        "2",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Rendered 2 frames"), "{stdout}");
    for name in ["frame_00000.png", "frame_00003.png"] {
        let (left, right, size) = lit_halves(&frames.join(name));
        assert_eq!(size, (160, 90));
        assert!(
            left > 200 && right > 200,
            "{name}: {left} lit pixels left, {right} right"
        );
        // Same character, nearly the same view: similar coverage in both eyes.
        let ratio = left as f32 / right as f32;
        assert!(
            (0.8..1.25).contains(&ratio),
            "{name}: eyes differ too much ({ratio})"
        );
    }
    assert!(
        !frames.join("frame_00001.png").exists(),
        "--every 3 skips frame 1"
    );
}

#[test]
fn render_pair_writes_one_image_per_eye() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/wombat.ron",
        "--out",
        dir.path().to_str().unwrap(),
        "--stereo",
        "pair",
        "--size",
        "64x64",
        "--frames",
        "1",
    ]);
    assert!(ok, "{stderr}");
    // Harmless probes (a Wayland compositor that is not there) print nothing
    // that reads as an error.
    assert!(
        !stderr
            .lines()
            .any(|l| l.to_lowercase().starts_with("error")),
        "{stderr}"
    );
    for eye in ["left", "right"] {
        let (l, r, size) = lit_halves(&dir.path().join(format!("frame_00000_{eye}.png")));
        assert_eq!(size, (64, 64));
        assert!(l + r > 200, "{eye} eye sees the wombat: {} pixels", l + r);
    }
}

/// A bake of another character (the wombat's one skin for the penguin's
/// three) is refused by name and nothing is written; a bake of the same
/// character at another resolution (`bake --resolution`) plays on the
/// character resampled as the bake resampled it.
#[test]
fn render_refuses_a_cache_of_another_character_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bake = |character: &str, name: &str| {
        let out = dir.path().join(name);
        let (ok, _, stderr) = plasticine(&[
            "bake",
            character,
            "--out",
            out.to_str().unwrap(),
            "--duration",
            "0.1",
            "--resolution",
            "8x8",
        ]);
        assert!(ok, "{stderr}");
        out.join("bake.plcache")
    };
    let wombat = bake("assets/wombat.ron", "wombat");
    let frames = dir.path().join("frames");
    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--baked",
        wombat.to_str().unwrap(),
        "--out",
        frames.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("does not belong to this character") && stderr.contains("skins"),
        "{stderr}"
    );
    assert!(!frames.exists(), "nothing written");

    let penguin = bake("assets/penguin.ron", "penguin");
    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--baked",
        penguin.to_str().unwrap(),
        "--out",
        frames.to_str().unwrap(),
        "--size",
        "64x64",
        "--stereo",
        "mono",
    ]);
    assert!(ok, "{stderr}");
    assert!(frames.join("frame_00000.png").exists());

    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--out",
        frames.to_str().unwrap(),
        "--size",
        "10x10",
    ]);
    assert!(!ok);
    assert!(stderr.contains("16..=8192"), "{stderr}");
}

/// `--map` colours the skin by a heat map and prints its legend; the
/// curvature map of the penguin is mostly blue-green where its paint is
/// black and white; an unknown map is refused with the choices.
#[test]
fn render_map_colours_the_skin_and_prints_its_legend() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("curvature");
    let (ok, stdout, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--size",
        "160x120",
        "--stereo",
        "mono",
        "--frames",
        "1",
        "--map",
        "curvature",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("curvature: blue flat"), "{stdout}");
    let (_, _, buf) = read_png(&out.join("frame_00000.png"));
    // Blue-dominant pixels (the map's flat end): the painted penguin has
    // none (black, white, orange, a grey floor and a slate sky).
    let blue = buf
        .chunks_exact(4)
        .filter(|p| p[2] as i32 > p[0] as i32 + 60 && p[2] as i32 > p[1] as i32 + 20)
        .count();
    assert!(blue > 300, "{blue} blue pixels");

    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--map",
        "strain",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("stretch") && stderr.contains("curvature"),
        "{stderr}"
    );

    // Layers: the muscles and skeleton alone, in x-ray: sky where the
    // floor is drawn by default (a bottom corner), and an unknown layer is
    // refused with the choices.
    let bare = dir.path().join("bare");
    // One small mono image of the penguin with only `layers` (and `extra`).
    let render_layers = |layers: &str, extra: &[&str]| {
        let mut args = vec![
            "render",
            "assets/penguin.ron",
            "--out",
            bare.to_str().unwrap(),
            "--size",
            "160x120",
            "--stereo",
            "mono",
            "--frames",
            "1",
            "--layers",
            layers,
        ];
        args.extend_from_slice(extra);
        let (ok, _, stderr) = plasticine(&args);
        assert!(ok, "{stderr}");
        read_png(&bare.join("frame_00000.png"))
    };
    let (w, h, buf) = render_layers("muscles,skeleton", &["--xray"]);
    let px = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    assert_eq!(px(3, h - 3), px(3, 3), "the floor was drawn");
    // The fat shell alone: a see-through yellow where the penguin is,
    // none drawn without it.
    let yellow = |layers: &str| {
        let (_, _, buf) = render_layers(layers, &[]);
        buf.chunks_exact(4)
            .filter(|p| p[0] as i32 > p[2] as i32 + 40 && p[1] as i32 > p[2] as i32 + 30)
            .count()
    };
    let (shell, none) = (yellow("fat"), yellow("skeleton"));
    assert!(
        shell > 300 && none == 0,
        "{shell} yellow pixels, {none} without"
    );
    let (ok, _, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--out",
        bare.to_str().unwrap(),
        "--layers",
        "skin,fur",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("skeleton") && stderr.contains("floor"),
        "{stderr}"
    );
}

/// `--contact-sheet` writes one PNG with every rendered frame tiled (four
/// frames two across), says where, and each tile shows the character.
#[test]
fn render_writes_a_contact_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sheet");
    let (ok, stdout, stderr) = plasticine(&[
        "render",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--size",
        "160x120",
        "--stereo",
        "mono",
        "--frames",
        "4",
        "--every",
        "10",
        "--contact-sheet",
    ]);
    assert!(ok, "{stderr}");
    let sheet = out.join("contact_sheet.png");
    assert!(stdout.contains("contact sheet:"), "{stdout}");
    let (w, h, buf) = read_png(&sheet);
    assert_eq!((w, h), (320, 240));
    // Each tile's centre column has the penguin's black or white or the
    // beak's orange somewhere: pixels far from both the sky and the floor.
    for tile in 0..4u32 {
        let (x0, y0) = (tile % 2 * 160, tile / 2 * 120);
        let lit = (y0..y0 + 120)
            .filter(|&y| {
                let i = ((y * 320 + x0 + 80) * 4) as usize;
                let p = &buf[i..i + 3];
                let (mx, mn) = (*p.iter().max().unwrap(), *p.iter().min().unwrap());
                !(40..=215).contains(&mx) || mx - mn > 90
            })
            .count();
        assert!(lit > 5, "tile {tile}: {lit} pixels of penguin");
    }
}

/// A heat map's legend is drawn in the image: its line, and under it a
/// colour bar from the map's first colour (fat: blue, none) to its last
/// (yellow, thick); a render of the paint has no legend.
#[test]
fn a_heat_maps_legend_and_colour_bar_are_drawn_in_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let render = |map: &str| {
        let out = dir.path().join(map);
        let (ok, _, stderr) = plasticine(&[
            "render",
            "assets/penguin.ron",
            "--out",
            out.to_str().unwrap(),
            "--size",
            "640x360",
            "--stereo",
            "mono",
            "--frames",
            "1",
            "--map",
            map,
        ]);
        assert!(ok, "{stderr}");
        read_png(&out.join("frame_00000.png"))
    };
    let (w, _, buf) = render("fat");
    let px = |buf: &[u8], x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i] as i32, buf[i + 1] as i32, buf[i + 2] as i32]
    };
    let blue = |p: [i32; 3]| p[2] > p[0] + 40 && p[2] > p[1] + 20;
    let yellow = |p: [i32; 3]| p[0] > 180 && p[1] > 180 && p[2] < 140;
    // A row near the top whose left end is the bar's blue and that turns
    // yellow further right.
    let bar =
        (0..80).find(|&y| blue(px(&buf, 8, y)) && (8..w / 2 + 200).any(|x| yellow(px(&buf, x, y))));
    let y = bar.expect("a colour bar from blue to yellow at the top left");
    // From left to right the bar goes blue → green → yellow: its green
    // channel rises along it.
    let end = (8..w).rev().find(|&x| yellow(px(&buf, x, y))).unwrap();
    let (a, m, b) = (px(&buf, 8, y), px(&buf, (8 + end) / 2, y), px(&buf, end, y));
    assert!(a[1] < m[1] && m[1] < b[1], "{a:?} {m:?} {b:?}");
    // The painted render has no legend: its top left is the sky.
    let (_, _, plain) = render("paint");
    assert_eq!(
        px(&plain, 8, y),
        px(&plain, w - 8, y),
        "no legend on the paint"
    );
}
