//! Tests of the scene geometry: closed, outward-facing skins, the
//! wireframe, the fat map, the flesh and the muscles.

use super::*;

fn cylinder(m: usize, n: usize, reverse: bool) -> SkinSurface {
    let mut positions = Vec::new();
    for j in 0..n {
        for i in 0..m {
            let mut a = i as f32 / m as f32 * std::f32::consts::TAU;
            if reverse {
                a = -a;
            }
            positions.push(Vec3::new(a.cos(), j as f32 * 0.1, a.sin()));
        }
    }
    SkinSurface {
        m,
        n,
        positions,
        fat: vec![0.0; m * n],
    }
}

/// On a cylinder the smooth normal is the radial direction, whichever
/// way the grid winds.
#[test]
fn skin_normals_point_radially_out() {
    for reverse in [false, true] {
        let s = cylinder(32, 6, reverse);
        let mut nrm = Vec::new();
        // (cos a, y, sin a) turns clockwise seen from above: T1×T2 points in.
        assert_eq!(skin_normals(&s, &mut nrm), !reverse);
        for (p, n) in s.positions.iter().zip(&nrm) {
            let radial = Vec3::new(p.x, 0.0, p.z).normalize();
            assert!(
                n.dot(radial) > 0.999,
                "normal {n} at {p} (reverse {reverse})"
            );
        }
    }
}

fn penguin_snapshot() -> SceneSnapshot {
    let ch = crate::io::load_character(std::path::Path::new(concat!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
        "/assets/penguin.ron"
    )))
    .expect("penguin loads");
    let posture = ch.skeleton.rest_posture();
    SceneSnapshot::of(std::sync::Arc::new(ch), posture, 0)
}

/// The size a skin is drawn at by default (refined when coarse), and
/// the refinement.
fn displayed(s: &SkinSurface) -> (usize, usize, usize) {
    let r = crate::skin_mesh::display_refinement(s.m);
    let (m, n) = crate::skin_mesh::refined_size(s.m, s.n, r);
    (m, n, r)
}

fn skin_only() -> SceneStyle {
    SceneStyle {
        muscles: MuscleStyle::Hidden,
        floor: false,
        skeleton: false,
        ..SceneStyle::default()
    }
}

/// The drawn skins are closed: every edge of the penguin's skin
/// triangles has exactly one twin running the other way (no hole at
/// the crown, the feet or the flipper tips), each skin encloses a
/// positive volume (its triangles face out), and the normals agree with
/// the faces around them.
#[test]
fn drawn_skins_are_watertight_and_face_out() {
    let snap = penguin_snapshot();
    let mut b = GeometryBuilder::new();
    let g = b
        .build(&snap, &skin_only(), &Decorations::default())
        .clone();
    let list = &g.opaque;
    let mut edges = std::collections::HashMap::new();
    for t in list.indices.chunks_exact(3) {
        for k in 0..3 {
            *edges.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
        }
    }
    for (&(a, b), &c) in &edges {
        assert_eq!(c, 1, "edge {a}->{b} drawn {c} times one way");
        assert_eq!(edges.get(&(b, a)), Some(&1), "edge {a}->{b}: a hole");
    }
    let p = |i: u32| Vec3::from(list.vertices[i as usize].position);
    let nrm = |i: u32| Vec3::from(list.vertices[i as usize].normal);
    let mut start = 0;
    let mut agree = 0;
    for skin in &snap.skins {
        let (m, n, _) = displayed(skin);
        let count = 3 * ClosedGrid::new(m, n).triangles(false).len();
        let tris = &list.indices[start..start + count];
        start += count;
        let volume: f32 = tris
            .chunks_exact(3)
            .map(|t| p(t[0]).dot(p(t[1]).cross(p(t[2]))) / 6.0)
            .sum();
        assert!(volume > 0.0, "a skin encloses {volume} m³");
        for t in tris.chunks_exact(3) {
            let face = (p(t[1]) - p(t[0])).cross(p(t[2]) - p(t[0]));
            agree += t.iter().filter(|&&v| nrm(v).dot(face) > 0.0).count();
        }
    }
    assert_eq!(start, list.indices.len());
    // Smooth normals may disagree with a face on a crumple, rarely.
    assert!(
        agree as f32 > 0.97 * start as f32,
        "{agree} of {start} corners"
    );
    assert!(
        list.vertices
            .iter()
            .all(|v| Vec3::from(v.position).is_finite()
                && (Vec3::from(v.normal).length() - 1.0).abs() < 1e-4)
    );
}

/// A skin whose top ring has collapsed to a point still draws, with no
/// NaN, and the wireframe covers the caps.
#[test]
fn a_collapsed_ring_draws_without_nan() {
    let mut snap = penguin_snapshot();
    let skin = &mut snap.skins[0];
    let (m, n) = (skin.m, skin.n);
    let tip = skin.positions[(n - 1) * m];
    for i in 0..m {
        skin.positions[(n - 1) * m + i] = tip;
    }
    let style = SceneStyle {
        wireframe: true,
        map: SkinMap::Fat,
        ..skin_only()
    };
    let mut b = GeometryBuilder::new();
    let g = b.build(&snap, &style, &Decorations::default());
    assert!(g.opaque.vertices.iter().all(|v| {
        v.position
            .iter()
            .chain(&v.normal)
            .chain(&v.color)
            .all(|x| x.is_finite())
    }));
    let grid = ClosedGrid::new(m, n);
    let wires: usize = snap
        .skins
        .iter()
        .map(|s| {
            // The lines through the simulated points (every r-th of the
            // refined grid's), the caps' rings and their meridians from
            // the simulated points.
            let (big_m, big_n, _) = displayed(s);
            let c = ClosedGrid::new(big_m, big_n);
            s.n * big_m + s.m * (big_n - 1) + 2 * (c.rings + 1) * s.m + 2 * c.rings * big_m
        })
        .sum();
    assert_eq!(g.lines.indices.len() / 2, wires);
    assert!(grid.rings > 0);
}

#[test]
fn fat_ramp_is_monotone_in_brightness_and_clamped() {
    let lum = |c: [f32; 4]| 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    let mut last = -1.0;
    // 0 .. 30 mm, the ramp's whole range.
    for k in 0..=15 {
        let c = SkinMap::Fat.color(k as f32 * 0.002, 0.03);
        assert!(lum(c) > last, "ramp not increasing at {k}");
        last = lum(c);
    }
    assert_eq!(
        SkinMap::Fat.color(1.0, 0.03),
        SkinMap::Fat.color(0.03, 0.03)
    );
    assert_eq!(
        SkinMap::Fat.color(-1.0, 0.03),
        SkinMap::Fat.color(0.0, 0.03)
    );
}

/// The penguin's paint is what is drawn: its skins' vertices carry the
/// painted colours (black, white and orange among them), refined with
/// the surface; an unpainted skin is drawn in the skin tone.
#[test]
fn painted_colours_are_drawn() {
    let mut snap = penguin_snapshot();
    let mut b = GeometryBuilder::new();
    let drawn: Vec<[f32; 4]> = b
        .build(&snap, &skin_only(), &Decorations::default())
        .opaque
        .vertices
        .iter()
        .map(|v| v.color)
        .collect();
    let near = |c: [f32; 4], want: [f32; 3]| (0..3).all(|k| (c[k] - want[k]).abs() < 0.05);
    for want in [
        [0.018, 0.018, 0.022],
        [0.80, 0.80, 0.78],
        [0.90, 0.32, 0.02],
    ] {
        assert!(
            drawn.iter().any(|&c| near(c, want)),
            "no vertex drawn in {want:?}"
        );
    }
    assert!(!drawn.contains(&SKIN_COLOR));
    let mut c = (*snap.character).clone();
    for skin in &mut c.skins {
        skin.points.color.clear();
    }
    snap.character = std::sync::Arc::new(c);
    let g = b.build(&snap, &skin_only(), &Decorations::default());
    assert!(g.opaque.vertices.iter().all(|v| v.color == SKIN_COLOR));
}

/// A coarse skin is drawn as the smooth surface through its points: its
/// silhouette turns less between neighbouring faces than the grid's
/// own facets, and `subdivide: 1` draws the facets.
#[test]
fn coarse_skins_are_drawn_smooth() {
    let snap = penguin_snapshot();
    let skin = &snap.skins[0];
    assert_eq!((skin.m, skin.n), (16, 16));
    let normal_turn = |style: &SceneStyle| {
        let mut b = GeometryBuilder::new();
        let g = b.build(&snap, style, &Decorations::default()).clone();
        // The body's grid triangles come first: the largest angle between
        // the normals of the two triangles of neighbouring quads around.
        let (m, n) = match style.subdivide {
            1 => (skin.m, skin.n),
            _ => {
                let (m, n, _) = displayed(skin);
                (m, n)
            }
        };
        let p = |i: u32| Vec3::from(g.opaque.vertices[i as usize].position);
        let face = |t: usize| {
            let i = &g.opaque.indices[3 * t..3 * t + 3];
            (p(i[1]) - p(i[0]))
                .cross(p(i[2]) - p(i[0]))
                .normalize_or_zero()
        };
        let mut turns: Vec<f32> = (1..n - 2)
            .flat_map(|j| (0..m).map(move |i| (i, j)))
            .map(|(i, j)| {
                let (q, r) = (j * m + i, j * m + (i + 1) % m);
                face(2 * q + 1).angle_between(face(2 * r)).to_degrees()
            })
            .collect();
        turns.sort_by(f32::total_cmp);
        turns[turns.len() * 95 / 100]
    };
    let facets = normal_turn(&SceneStyle {
        subdivide: 1,
        ..skin_only()
    });
    let smooth = normal_turn(&skin_only());
    assert!(
        smooth < 0.5 * facets,
        "p95 turn {smooth:.1} deg drawn smooth, {facets:.1} deg as facets"
    );
}

/// The penguin's geometry: one quad pair per skin cell, every index in
/// range, and muscles re-tessellated only when their shape changes.
#[test]
fn penguin_geometry_is_consistent() {
    let ch = crate::io::load_character(std::path::Path::new(concat!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
        "/assets/penguin.ron"
    )))
    .expect("penguin loads");
    let posture = ch.skeleton.rest_posture();
    let snap = SceneSnapshot::of(std::sync::Arc::new(ch), posture, 0);
    let mut b = GeometryBuilder::new();
    let style = SceneStyle {
        muscles: MuscleStyle::Opaque,
        floor: false,
        skeleton: false,
        ..SceneStyle::default()
    };
    let g = b.build(&snap, &style, &Decorations::default()).clone();
    let skin = &snap.skins[0];
    let muscles = snap.character.muscles.len();
    let per_muscle = MuscleShape::sphere(1.0)
        .tessellate(MUSCLE_SLICES, MUSCLE_STACKS)
        .indices
        .len();
    let skin_tris: usize = snap
        .skins
        .iter()
        .map(|s| {
            let (m, n, _) = displayed(s);
            ClosedGrid::new(m, n).triangles(false).len()
        })
        .sum();
    assert_eq!(g.opaque.indices.len() / 3, skin_tris + muscles * per_muscle);
    let nv = g.opaque.vertices.len() as u32;
    assert!(g.opaque.indices.iter().all(|&i| i < nv));
    assert!(skin.m * skin.n > 0);
    let cached: Vec<_> = b
        .muscle_meshes
        .iter()
        .map(|m| m.as_ref().map(|x| x.1.positions.as_ptr()))
        .collect();
    b.build(&snap, &style, &Decorations::default());
    let again: Vec<_> = b
        .muscle_meshes
        .iter()
        .map(|m| m.as_ref().map(|x| x.1.positions.as_ptr()))
        .collect();
    assert_eq!(
        cached, again,
        "unchanged muscles must not be re-tessellated"
    );
}

/// Muscles are drawn in their painted colour (the shipped penguin's feet
/// orange), the others muscle red.
#[test]
fn muscles_are_drawn_in_their_colour() {
    let snap = penguin_snapshot();
    let style = SceneStyle {
        skin: false,
        muscles: MuscleStyle::Opaque,
        floor: false,
        skeleton: false,
        ..SceneStyle::default()
    };
    let mut b = GeometryBuilder::new();
    let g = b.build(&snap, &style, &Decorations::default());
    let painted: Vec<[f32; 4]> = snap
        .character
        .muscles
        .iter()
        .filter_map(|m| m.color.map(|[r, g, b]| [r, g, b, 1.0]))
        .collect();
    assert_eq!(painted.len(), 2, "the penguin's two feet");
    let count = |c: [f32; 4]| g.opaque.vertices.iter().filter(|v| v.color == c).count();
    let per_muscle = g.opaque.vertices.len() / snap.character.muscles.len();
    assert_eq!(count(painted[0]), 2 * per_muscle);
    assert_eq!(
        count(MUSCLE_COLOR),
        (snap.character.muscles.len() - 2) * per_muscle
    );
}

/// X-ray draws the skins see-through: the same triangles in the
/// translucent list at [`XRAY_ALPHA`], none in the opaque one.
#[test]
fn xray_draws_the_skin_see_through() {
    let snap = penguin_snapshot();
    let mut b = GeometryBuilder::new();
    let solid = b
        .build(&snap, &skin_only(), &Decorations::default())
        .clone();
    let style = SceneStyle {
        xray: true,
        ..skin_only()
    };
    let seen_through = b.build(&snap, &style, &Decorations::default()).clone();
    assert!(!solid.opaque.indices.is_empty() && solid.translucent.indices.is_empty());
    assert!(seen_through.opaque.indices.is_empty());
    assert_eq!(seen_through.translucent.indices, solid.opaque.indices);
    assert!(
        seen_through
            .translucent
            .vertices
            .iter()
            .all(|v| v.color[3] == XRAY_ALPHA)
    );
}

/// The fat shell is each skin's inner face of its fat: every simulated
/// point moved in along the skin's normal by its fat thickness (less the
/// lift that keeps it off the muscles in the depth test),
/// see-through in the fat colour, closed like the skin; thicker fat
/// moves it further in; no fat shell unless asked.
#[test]
fn the_fat_shell_lies_one_fat_thickness_inside_the_skin() {
    let mut snap = penguin_snapshot();
    // Liposuction-like: the first skin's fat varies point by point.
    for (k, f) in snap.skins[0].fat.iter_mut().enumerate() {
        *f = 0.005 + 0.01 * (k % 7) as f32 / 6.0;
    }
    let flat = SceneStyle {
        subdivide: 1,
        ..skin_only()
    };
    let mut b = GeometryBuilder::new();
    let plain = b.build(&snap, &flat, &Decorations::default()).clone();
    assert!(
        plain.translucent.indices.is_empty(),
        "no shell unless asked"
    );
    let style = SceneStyle { fat: true, ..flat };
    let g = b.build(&snap, &style, &Decorations::default()).clone();
    // One closed shell per skin, the skins' own topology.
    assert_eq!(g.translucent.indices.len(), g.opaque.indices.len());
    assert!(
        g.translucent
            .vertices
            .iter()
            .all(|v| v.color == FAT_SHELL_COLOR)
    );
    let mut base = 0;
    let mut worst = 0.0f32;
    for skin in &snap.skins {
        let grid = ClosedGrid::new(skin.m, skin.n);
        let mut normals = Vec::new();
        skin_normals(skin, &mut normals);
        for k in 0..skin.m * skin.n {
            let out = Vec3::from(g.opaque.vertices[base + k].position);
            let inner = Vec3::from(g.translucent.vertices[base + k].position);
            assert_eq!(out, skin.positions[k]);
            let d = out - inner;
            let f = skin.fat[k] - FAT_SHELL_LIFT;
            // In along the normal, by the fat: relative to the fat.
            worst = worst.max((d.dot(normals[k]) - f).abs() / f);
            worst = worst.max(d.cross(normals[k]).length() / f);
        }
        base += grid.vertex_count();
    }
    assert!(worst < 1e-3, "off by {worst} of the fat");
    // Each shell is a closed surface inside its skin: less volume.
    let volume = |list: &DrawList| -> f32 {
        let p = |i: u32| Vec3::from(list.vertices[i as usize].position);
        list.indices
            .chunks_exact(3)
            .map(|t| p(t[0]).dot(p(t[1]).cross(p(t[2]))) / 6.0)
            .sum()
    };
    let (skins, shells) = (volume(&g.opaque), volume(&g.translucent));
    assert!(
        shells > 0.0 && shells < 0.95 * skins,
        "shells {shells} m³ in skins {skins} m³"
    );
}

/// On a round tube of radius 1 with 0.1 of fat the drawn shell, refined
/// like the skin, is a round tube of radius 0.9 (and the lift).
#[test]
fn a_tube_s_fat_shell_is_a_tube_one_fat_thinner() {
    let mut skin = cylinder(24, 6, false);
    skin.fat = vec![0.1; skin.positions.len()];
    let mut g = SceneGeometry::default();
    let style = SceneStyle {
        fat: true,
        ..skin_only()
    };
    push_fat_shell(&mut g, &skin, &style);
    let (m, n, r) = displayed(&skin);
    assert!(r > 1, "refined like the skin");
    let shell = &g.translucent.vertices[..m * n];
    for v in shell {
        let p = Vec3::from(v.position);
        let radius = Vec3::new(p.x, 0.0, p.z).length();
        let want = 0.9 + FAT_SHELL_LIFT;
        assert!((radius - want).abs() < 2e-3, "radius {radius} at {p}");
    }
    assert_eq!(
        g.translucent.vertices.len(),
        ClosedGrid::new(m, n).vertex_count()
    );
}
