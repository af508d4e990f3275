//! The samples' colours: painted on the settled skins from where each point
//! sits on the character at rest (the penguin's black back and white belly
//! and orange beak and feet, the wombat's brown coat and dark nose, the torso's
//! skin tone), so any resolution gets the same markings.

use crate::character::{Character, Posture};
use crate::kinematics::PosedBody;
use glam::Vec3;

/// Linear RGB.
const BLACK: Vec3 = Vec3::new(0.018, 0.018, 0.022);
const WHITE: Vec3 = Vec3::new(0.80, 0.80, 0.78);
const ORANGE: Vec3 = Vec3::new(0.90, 0.32, 0.02);
const COAT: Vec3 = Vec3::new(0.17, 0.12, 0.08);
const NOSE: Vec3 = Vec3::new(0.03, 0.025, 0.022);
const SKIN_TONE: Vec3 = Vec3::new(0.76, 0.50, 0.38);

/// `s(x)` = 3x² − 2x³ of x clamped to [0, 1]: a soft edge between two colours.
fn smooth(x: f32) -> f32 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// Paints every skin of sample `name` (see the module docs), and the
/// penguin's feet orange; other characters are left as they are.
pub(super) fn paint(name: &str, c: &mut Character, rest: &Posture) {
    if name == "penguin" {
        for foot in ["foot_l", "foot_r"] {
            let Some(j) = c.skeleton.find(foot) else {
                continue;
            };
            for m in c.muscles.iter_mut().filter(|m| m.joint == j) {
                m.color = Some(ORANGE.to_array());
            }
        }
    }
    let body = PosedBody::new(c, rest);
    // How far inside muscle k's frame a point is, as the ellipsoid through
    // `radii` measures it (below 1: inside).
    let within = |k: usize, p: Vec3, radii: Vec3| -> f32 {
        body.muscles.get(k).map_or(f32::INFINITY, |m| {
            (m.to_local.transform_point3(p) / radii).length()
        })
    };
    for skin in &mut c.skins {
        let joint = |s: &str| {
            c.skeleton
                .find(s)
                .map(|j| body.joints[j].translation.into())
        };
        let colour: Box<dyn Fn(Vec3) -> Vec3> = match name {
            "penguin" => {
                let chin: Vec3 = joint("head").unwrap_or(Vec3::Y);
                let flipper = skin.name.starts_with("flipper");
                Box::new(move |p: Vec3| {
                    if flipper {
                        return BLACK;
                    }
                    // White in front (+z), black behind and over the head;
                    // the beak (muscle 3 and a finger's width of fat around it) orange.
                    let around = Vec3::new(p.x, 0.0, p.z).normalize_or_zero().z;
                    let belly =
                        smooth((around - 0.15) / 0.35) * smooth((chin.y - 0.01 - p.y) / 0.04);
                    let coat = BLACK.lerp(WHITE, belly);
                    let beak =
                        1.0 - smooth((within(3, p, Vec3::new(0.046, 0.040, 0.065)) - 0.85) / 0.3);
                    coat.lerp(ORANGE, beak)
                })
            }
            "wombat" => {
                let snout: Vec3 = joint("snout").unwrap_or(Vec3::Z);
                Box::new(move |p: Vec3| {
                    COAT.lerp(NOSE, 1.0 - smooth((p.distance(snout) - 0.065) / 0.03))
                })
            }
            "torso" | "figure" => Box::new(|_| SKIN_TONE),
            _ => return,
        };
        skin.points.color = skin
            .points
            .position
            .iter()
            .map(|&p| colour(p).clamp(Vec3::ZERO, Vec3::ONE).to_array())
            .collect();
    }
}
