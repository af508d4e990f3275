//! The shipped sample files are what the sample code builds: each sample
//! rebuilt at 16×16 writes, number for number, the file in `assets/`
//! (`plasticine sample NAME --out assets/NAME.ron` regenerates one).

use plasticine::io::character_to_string;

/// The numbers of a RON text, and the text with each number replaced by `#`.
fn split_numbers(text: &str) -> (String, Vec<f64>) {
    let mut shape = String::new();
    let mut numbers = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let starts_number = c.is_ascii_digit()
            || (c == '-' && bytes.get(i + 1).is_some_and(|b| b.is_ascii_digit()));
        let in_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts_number && !in_word {
            let mut j = i + 1;
            while j < bytes.len()
                && (bytes[j].is_ascii_digit()
                    || matches!(bytes[j], b'.' | b'e' | b'E' | b'-' | b'+'))
            {
                j += 1;
            }
            numbers.push(text[i..j].parse().expect("a number"));
            shape.push('#');
            i = j;
        } else {
            shape.push(c);
            i += 1;
        }
    }
    (shape, numbers)
}

#[test]
fn every_shipped_sample_is_what_its_code_builds() {
    for name in plasticine::samples::NAMES {
        let built = plasticine::samples::build(name, 16, 16).expect("the sample builds");
        let built = character_to_string(&built).expect("serializes");
        let shipped = std::fs::read_to_string(format!("assets/{name}.ron")).expect("shipped");
        let (shape_b, numbers_b) = split_numbers(&built);
        let (shape_s, numbers_s) = split_numbers(&shipped);
        assert!(
            shape_b == shape_s,
            "assets/{name}.ron is not what the sample code builds (fields or counts differ): \
             regenerate it with `plasticine sample {name} --out assets/{name}.ron`"
        );
        assert_eq!(numbers_b.len(), numbers_s.len());
        // The build is deterministic; the slack is for a libm that rounds
        // differently on another machine (positions in metres: 0.1 mm).
        let worst = numbers_b
            .iter()
            .zip(&numbers_s)
            .map(|(a, b)| (a - b).abs() / a.abs().max(b.abs()).max(1.0))
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-4,
            "assets/{name}.ron differs from what the sample code builds (by {worst:.2e}): \
             regenerate it with `plasticine sample {name} --out assets/{name}.ron`"
        );
    }
}

#[test]
fn the_number_splitter_sees_numbers_but_not_names() {
    let (shape, numbers) = split_numbers("(x: -1.5e-3, flipper_l2: 20, v: [3, 4])");
    assert_eq!(shape, "(x: #, flipper_l2: #, v: [#, #])");
    assert_eq!(numbers, vec![-1.5e-3, 20.0, 3.0, 4.0]);
}

/// The shipped penguin is painted as a penguin (white belly in
/// front, black back and crown, orange round the beak, black flippers,
/// orange feet), and the paint follows a resampling to 32×32.
#[test]
fn the_penguin_is_painted_and_its_paint_follows_resampling() {
    use glam::Vec3;
    let penguin = plasticine::samples::shipped_penguin();
    for (label, c) in [
        ("shipped", penguin.clone()),
        (
            "resampled",
            plasticine::samples::resampled("penguin", 32, 32).expect("resamples"),
        ),
    ] {
        let luminance = |x: [f32; 3]| 0.2126 * x[0] + 0.7152 * x[1] + 0.0722 * x[2];
        let body = &c.skins[0];
        assert_eq!(body.points.color.len(), body.m * body.n, "{label}");
        // The body's points facing forward (+z) on the belly, those facing
        // back at the same height, and the beak's neighbourhood.
        let (mut front, mut back, mut orange) = (0, 0, 0);
        for (p, col) in body.points.position.iter().zip(&body.points.color) {
            let around = Vec3::new(p.x, 0.0, p.z).normalize_or_zero().z;
            if (0.15..0.3).contains(&p.y) {
                if around > 0.8 {
                    assert!(luminance(*col) > 0.6, "{label}: belly point {p} is {col:?}");
                    front += 1;
                } else if around < -0.5 {
                    assert!(luminance(*col) < 0.05, "{label}: back point {p} is {col:?}");
                    back += 1;
                }
            }
            if col[0] > 0.6 && col[1] < 0.5 * col[0] && col[2] < 0.1 {
                orange += 1;
                assert!(p.z > 0.0 && p.y > 0.3, "{label}: orange at {p}");
            }
        }
        assert!(
            front > 0 && back > 0 && orange > 0,
            "{label}: {front} {back} {orange}"
        );
        for flipper in &c.skins[1..] {
            assert!(
                flipper.points.color.iter().all(|x| luminance(*x) < 0.05),
                "{label}: flipper '{}' is not black",
                flipper.name
            );
        }
        // The feet are muscles on the foot joints, painted orange; the
        // others keep muscle red.
        for (k, m) in c.muscles.iter().enumerate() {
            let joint = &c.skeleton.joints[m.joint].name;
            match m.color {
                Some([r, g, b]) => assert!(
                    joint.starts_with("foot") && r > 0.6 && g < 0.5 * r && b < 0.1,
                    "{label}: muscle {k} on {joint} painted {:?}",
                    m.color
                ),
                None => assert!(
                    !joint.starts_with("foot"),
                    "{label}: foot muscle {k} unpainted"
                ),
            }
        }
    }
}
