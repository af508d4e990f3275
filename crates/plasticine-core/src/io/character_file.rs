//! The versioned character file.
//!
//! A character file is UTF-8 RON holding a header and the [`Character`]:
//!
//! ```ron
//! (
//!     format: "plasticine-character",
//!     version: 2,
//!     character: (
//!         name: "penguin",
//!         skeleton: (joints: [ ... ]),
//!         muscles: [ ... ],
//!         ...
//!     ),
//! )
//! ```
//!
//! `character` is the serde form of [`Character`] (struct names omitted). Fields
//! with defaults (`muscles`, `skins`, `environment`, `key_postures`, a joint's
//! `rest_rotation` and `dofs`, ...) may be left out. Unknown fields are ignored
//! by the data model's serde derives.
//!
//! Loading, in order:
//! 1. refuse files over [`MAX_CHARACTER_FILE_BYTES`] (checked before reading,
//!    and again while reading, so a growing file or a device cannot exceed it);
//! 2. check UTF-8 (an error gives line and column of the first bad byte);
//! 3. read the header (`format`, `version`), so a wrong format or a file
//!    from a newer build is refused with a clear message rather than a parse
//!    error somewhere in the body: as it is met when it comes first (one
//!    pass, `one_pass`), else by parsing the file once for the header alone;
//! 4. the body deserializes as the current version's, then an older one goes
//!    through `migrate` (below); a newer one is refused;
//! 5. run [`Character::validate`], so a loaded character is always usable.
//!
//! Parsing uses RON's recursion limit ([`RON_RECURSION_LIMIT`]), so deeply
//! nested hostile input is an error, not a stack overflow. Sequences are grown
//! as elements are parsed (RON gives serde no length hints), so memory stays
//! proportional to the input, which is bounded by the size limit.
//!
//! Saving validates first (a file that was saved can always be loaded), then
//! writes pretty RON through [`write_atomic`].

use super::{IoError, write_atomic};
use crate::character::{Character, InvalidField, Skin};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// The `format` string of a character file.
pub const CHARACTER_FORMAT: &str = "plasticine-character";
/// The version this build writes, and the newest it reads.
///
/// Version 2: the same fields, new meanings. Skin densities (mass,
/// damping, band `k_s` and `k_d`) are per unit of the skin's rest area instead of
/// its u-area; `stretch` is the modulus of the stretch (Biot) membrane and
/// `bend` the rigidity of the angle bending (see `skin::elastic`); rest
/// curvatures are normal curvatures in 1/m, convex positive.
pub const CHARACTER_FORMAT_VERSION: u32 = 2;
/// The oldest version this build can migrate.
pub const OLDEST_CHARACTER_FORMAT_VERSION: u32 = 1;
/// Files larger than this are refused before being read (512 MiB).
pub const MAX_CHARACTER_FILE_BYTES: u64 = 512 << 20;
/// Nesting depth RON allows while parsing. A character needs about 8 levels.
pub const RON_RECURSION_LIMIT: usize = 128;

pub(crate) fn ron_options() -> ron::Options {
    ron::Options::default().with_recursion_limit(RON_RECURSION_LIMIT)
}

#[derive(Serialize)]
#[serde(rename = "CharacterFile")]
struct FileOut<'a> {
    format: &'a str,
    version: u32,
    character: &'a Character,
}

/// The header alone; `character` is skipped (parsed for syntax only).
#[derive(Deserialize)]
#[serde(rename = "CharacterFile")]
struct Header {
    format: String,
    version: u32,
}

/// The current version's file. `format` and `version` were checked via
/// [`Header`] and are ignored here.
#[derive(Deserialize)]
#[serde(rename = "CharacterFile")]
struct FileIn {
    character: Character,
}

/// Saves `character` to `path` as pretty RON, atomically. Refuses an invalid
/// character (the error names the field), so every saved file loads.
pub fn save_character(path: &Path, character: &Character) -> Result<(), IoError> {
    check(character, path)?;
    let text = character_to_string(character).map_err(|e| IoError::Serialize {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    write_atomic(path, text.as_bytes())
}

/// The text [`save_character`] writes (without validating).
pub fn character_to_string(character: &Character) -> Result<String, ron::Error> {
    let file = FileOut {
        format: CHARACTER_FORMAT,
        version: CHARACTER_FORMAT_VERSION,
        character,
    };
    let mut text = ron_options().to_string_pretty(&file, ron::ser::PrettyConfig::new())?;
    text.push('\n');
    Ok(text)
}

/// Loads and validates a character file.
pub fn load_character(path: &Path) -> Result<Character, IoError> {
    let text = read_text(path, MAX_CHARACTER_FILE_BYTES)?;
    parse_character(&text, path)
}

/// Parses and validates the text of a character file; `origin` names it in
/// errors.
pub fn parse_character(text: &str, origin: &Path) -> Result<Character, IoError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let character = match one_pass(text, origin) {
        Some(read) => read?,
        None => two_passes(text, origin)?,
    };
    check(&character, origin)?;
    Ok(character)
}

/// Step 3 and 4 in one pass, for a file whose header comes before its body
/// (every file this program writes): the header is checked as it is read,
/// so a foreign or newer file is refused before its body is parsed, and the
/// body is parsed once. A 36 MB character (three 128×128 skins) loads in
/// about half the time of [`two_passes`]. `None` when the file is anything
/// else (the body first, a field missing or twice, a syntax error): then
/// [`two_passes`] reads it, so its result and its errors are the same as
/// they always were.
fn one_pass(text: &str, origin: &Path) -> Option<Result<Character, IoError>> {
    let refused = std::cell::Cell::new(None);
    let seed = HeaderFirst {
        origin,
        refused: &refused,
    };
    match ron_options().from_str_seed(text, seed) {
        Ok((version, character)) => Some(migrate(version, character, origin)),
        Err(_) => refused.take().map(Err),
    }
}

/// Step 3 (the header alone, the body parsed for syntax only) and then step
/// 4: for files whose header does not come first.
fn two_passes(text: &str, origin: &Path) -> Result<Character, IoError> {
    let header: Header = ron_options()
        .from_str(text)
        .map_err(|e| parse_error(origin, e))?;
    refuse(&header.format, header.version, origin)?;
    let file: FileIn = ron_options()
        .from_str(text)
        .map_err(|e| parse_error(origin, e))?;
    migrate(header.version, file.character, origin)
}

/// The header's verdict: a foreign format, a newer version or one too old
/// to migrate.
fn refuse(format: &str, version: u32, origin: &Path) -> Result<(), IoError> {
    if format != CHARACTER_FORMAT {
        return Err(IoError::WrongFormat {
            path: origin.to_path_buf(),
            expected: CHARACTER_FORMAT,
            found: format.to_owned(),
        });
    }
    if version > CHARACTER_FORMAT_VERSION {
        return Err(IoError::NewerVersion {
            path: origin.to_path_buf(),
            version,
            supported: CHARACTER_FORMAT_VERSION,
        });
    }
    if version < OLDEST_CHARACTER_FORMAT_VERSION {
        return Err(unknown_version(version, origin));
    }
    Ok(())
}

/// A version this build cannot migrate.
fn unknown_version(version: u32, origin: &Path) -> IoError {
    IoError::UnknownVersion {
        path: origin.to_path_buf(),
        version,
        oldest: OLDEST_CHARACTER_FORMAT_VERSION,
        supported: CHARACTER_FORMAT_VERSION,
    }
}

/// The file's struct read field by field (see [`one_pass`]). A refusal by the
/// header is kept in `refused` and ends the parse; any other surprise ends it
/// with `refused` empty.
struct HeaderFirst<'r> {
    origin: &'r Path,
    refused: &'r std::cell::Cell<Option<IoError>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for HeaderFirst<'_> {
    type Value = (u32, Character);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_struct("CharacterFile", &["format", "version", "character"], self)
    }
}

impl<'de> serde::de::Visitor<'de> for HeaderFirst<'_> {
    type Value = (u32, Character);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a character file")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::{Error, IgnoredAny};
        let unusual = || A::Error::custom("not a file with its header first");
        let (mut format, mut version, mut character) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" if format.is_none() => format = Some(map.next_value::<String>()?),
                "version" if version.is_none() => version = Some(map.next_value::<u32>()?),
                "character" if character.is_none() => {
                    let (Some(format), Some(version)) = (&format, version) else {
                        return Err(unusual());
                    };
                    if let Err(e) = refuse(format, version, self.origin) {
                        self.refused.set(Some(e));
                        return Err(unusual());
                    }
                    character = Some(map.next_value::<Character>()?);
                }
                "format" | "version" | "character" => return Err(unusual()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (version, character) {
            (Some(version), Some(character)) => Ok((version, character)),
            _ => Err(unusual()),
        }
    }
}

/// Brings a body read from a file of format `version` up to today's
/// [`Character`].
///
/// Version 1 has today's fields with the old skin model's meanings: it is
/// parsed as it is and [`upgrade_v1`] converts the values. When the fields
/// themselves change:
/// - move today's serde structs, frozen, into a submodule here with a
///   conversion to the new [`Character`];
/// - bump [`CHARACTER_FORMAT_VERSION`] and add an arm for the old version;
///   [`HeaderFirst`] and [`two_passes`] then read an old body with its frozen
///   struct, chosen by the version they have read;
/// - keep the arms forever, each with a test loading a file of its version.
///
/// The brief proposed migrating a `ron::Value`, but RON's `Value` cannot be
/// deserialized into enums (it does not keep variant names), and the model has
/// enums (`Primitive`, `DeformationParam`); frozen typed structs also keep line
/// and column in migration errors.
fn migrate(version: u32, mut character: Character, origin: &Path) -> Result<Character, IoError> {
    match version {
        CHARACTER_FORMAT_VERSION => {}
        1 => character.skins.iter_mut().for_each(upgrade_v1),
        _ => return Err(unknown_version(version, origin)),
    }
    Ok(character)
}

/// Converts a version-1 skin's material to version 2's meanings, point by
/// point, so the skin behaves as it did for small strains:
/// - densities per u-area → per rest area: divided by J = √det G⁰ (the rest
///   area per u-area);
/// - `stretch`: the old energy ½η(G − G⁰)² per u-area has, for a small
///   strain ε along a grid line, 2η G⁰² ε²; the new ½η' ε² per rest area
///   gives η' = 4η G⁰αα²/J on the stretches and η' = η G⁰11 G⁰22/J on the
///   shear (the cosine of the grid angle);
/// - `bend`: ½ξ B² with B ≈ κ Gαα per u-area → ξ' = ξ (G⁰11² + G⁰22²)/(2J);
/// - rest curvature B⁰ (u-units, convex negative) → κ⁰ = −B⁰αβ/√(G⁰αα G⁰ββ).
pub fn upgrade_v1(skin: &mut Skin) {
    let p = &mut skin.points;
    for k in 0..p.position.len() {
        let [g11, g12, g22] = p.rest_metric[k];
        let det = (g11 * g22 - g12 * g12).max(1e-24);
        let j = det.sqrt();
        p.mass_density[k] /= j;
        p.damping_density[k] /= j;
        let [e11, e12, e22] = p.stretch[k];
        p.stretch[k] = [
            4.0 * e11 * g11 * g11 / j,
            e12 * g11 * g22 / j,
            4.0 * e22 * g22 * g22 / j,
        ];
        p.bend[k] *= (g11 * g11 + g22 * g22) / (2.0 * j);
        let [b11, b12, b22] = p.rest_curvature[k];
        let (s11, s22) = (g11.max(1e-12), g22.max(1e-12));
        p.rest_curvature[k] = [-b11 / s11, -b12 / (s11 * s22).sqrt(), -b22 / s22];
        if let Some(b) = &mut p.band[k] {
            b.ks /= j;
            b.kd /= j;
        }
    }
}

pub(crate) fn parse_error(origin: &Path, e: ron::error::SpannedError) -> IoError {
    let message = match e.code {
        // RON's own text advises raising the limit, which is not the user's fix.
        ron::Error::ExceededRecursionLimit => {
            format!("nested more than {RON_RECURSION_LIMIT} levels deep")
        }
        code => code.to_string(),
    };
    IoError::Parse {
        path: origin.to_path_buf(),
        line: e.span.start.line,
        col: e.span.start.col,
        message,
    }
}

/// [`Character::validate`], preceded by the size check it cannot do itself
/// (`m * n` would overflow before its comparison on hostile sizes).
fn check(character: &Character, origin: &Path) -> Result<(), IoError> {
    let invalid = |e: InvalidField| IoError::Invalid {
        path: origin.to_path_buf(),
        field: e.field,
        message: e.message,
    };
    for (k, s) in character.skins.iter().enumerate() {
        if s.m.checked_mul(s.n).is_none_or(|p| p > Skin::MAX_POINTS) {
            return Err(invalid(InvalidField::new(
                format!("skins[{k}].m"),
                format!(
                    "resolution {}x{} is over {} points",
                    s.m,
                    s.n,
                    Skin::MAX_POINTS
                ),
            )));
        }
    }
    character.validate().map_err(invalid)
}

/// The whole file, refusing more than `limit` bytes (checked before and
/// while reading: the file may grow in between).
pub(crate) fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, IoError> {
    let file = std::fs::File::open(path).map_err(|e| IoError::os(path, "open", e))?;
    let size = file
        .metadata()
        .map_err(|e| IoError::os(path, "read the size of", e))?
        .len();
    if size > limit {
        return Err(IoError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| IoError::os(path, "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(IoError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Reads a UTF-8 text file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, IoError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let good = &e.as_bytes()[..offset];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        // Valid prefix, so this is a char count.
        let col = 1 + std::str::from_utf8(&good[line_start..]).map_or(0, |s| s.chars().count());
        IoError::NotUtf8 {
            path: path.to_path_buf(),
            offset,
            line,
            col,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_version_goes_through_migrate() {
        let text = r#"(format: "plasticine-character", version: 0, character: ())"#;
        let err = parse_character(text, Path::new("old.ron")).unwrap_err();
        assert!(
            matches!(err, IoError::UnknownVersion { version: 0, .. }),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("old.ron: format version 0"),
            "{err}"
        );
    }

    #[test]
    fn header_is_checked_before_body() {
        // The body is not a valid character, but the version is refused first.
        let text = r#"(format: "plasticine-character", version: 7, character: (bones: 3))"#;
        let err = parse_character(text, Path::new("new.ron")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "new.ron: written by a newer Plasticine: version 7, this build reads up to 2"
        );
    }

    /// A saved sample's text with its `character` moved before the header.
    fn body_first(text: &str) -> String {
        let start = text.find("character: ").unwrap();
        let end = text.rfind(",\n)").unwrap();
        format!("({}, {})", &text[start..end], &text[1..start])
    }

    #[test]
    fn a_file_reads_the_same_whichever_comes_first_its_header_or_its_body() {
        let sample = crate::samples::build("penguin", 4, 4).unwrap();
        let text = character_to_string(&sample).unwrap();
        let reordered = body_first(&text);
        assert!(
            reordered.starts_with("(character: ("),
            "{}",
            &reordered[..40]
        );
        let origin = Path::new("p.ron");
        assert!(
            one_pass(&text, origin).is_some(),
            "a saved file is read once"
        );
        assert!(
            one_pass(&reordered, origin).is_none(),
            "the body first is read twice"
        );
        assert_eq!(parse_character(&text, origin).unwrap(), sample);
        assert_eq!(parse_character(&reordered, origin).unwrap(), sample);
        // A version-1 file is upgraded on either path, and alike.
        let old = text.replacen("version: 2,", "version: 1,", 1);
        let upgraded = parse_character(&old, origin).unwrap();
        assert_ne!(upgraded, sample, "version 1 means other densities");
        assert_eq!(
            parse_character(&body_first(&old), origin).unwrap(),
            upgraded
        );
    }

    #[test]
    fn a_newer_file_is_refused_by_version_whichever_comes_first() {
        for text in [
            r#"(format: "plasticine-character", version: 7, character: (bones: 3))"#,
            r#"(character: (bones: 3), format: "plasticine-character", version: 7)"#,
            r#"(format: "plasticine-character", character: (bones: 3), version: 7)"#,
        ] {
            let err = parse_character(text, Path::new("new.ron")).unwrap_err();
            assert!(
                matches!(err, IoError::NewerVersion { version: 7, .. }),
                "{text}: {err}"
            );
        }
        let text = r#"(format: "blender-scene", version: 2, character: (bones: 3))"#;
        let err = parse_character(text, Path::new("x.ron")).unwrap_err();
        assert!(matches!(err, IoError::WrongFormat { .. }), "{err}");
    }

    #[test]
    fn a_body_that_does_not_parse_is_located() {
        let sample = crate::samples::build("penguin", 4, 4).unwrap();
        let text =
            character_to_string(&sample)
                .unwrap()
                .replacen("name: \"penguin\"", "name: 3", 1);
        let err = parse_character(&text, Path::new("p.ron")).unwrap_err();
        let IoError::Parse { line, .. } = err else {
            panic!("{err}")
        };
        let expected = 1 + text[..text.find("name: 3").unwrap()].matches('\n').count();
        assert_eq!(line, expected, "the error is on the line of the bad name");
    }

    #[test]
    fn non_utf8_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.ron");
        std::fs::write(&p, b"(format: \"x\",\n  ab\xff)").unwrap();
        let err = load_character(&p).unwrap_err();
        assert!(
            matches!(
                err,
                IoError::NotUtf8 {
                    line: 2,
                    col: 5,
                    offset: 18,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn size_limit_is_checked_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.ron");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(2000).unwrap(); // sparse: nothing is really written
        let err = read_text(&p, 1000).unwrap_err();
        assert!(
            matches!(
                err,
                IoError::TooLarge {
                    size: 2000,
                    limit: 1000,
                    ..
                }
            ),
            "{err}"
        );
    }
}
