//! The timeline's commands: key postures set, moved, deleted and given
//! their Kochanek–Bartels parameters.

use super::inverse::Inverse;
use crate::anim::KEY_TIME_EPSILON;
use crate::character::{Character, KeyPosture, Posture};
use crate::tools::command::{Command, EditError, check_key_time, check_tcb, invalid, refused};

/// The index of the key within [`KEY_TIME_EPSILON`] of `time` (the nearest).
fn find_key(c: &Character, time: f32) -> Option<usize> {
    c.key_postures
        .iter()
        .enumerate()
        .filter(|(_, k)| (k.time - time).abs() < KEY_TIME_EPSILON)
        .min_by(|a, b| (a.1.time - time).abs().total_cmp(&(b.1.time - time).abs()))
        .map(|(i, _)| i)
}

fn no_such_key(c: &Character, cmd: &Command, time: f32) -> EditError {
    EditError::NoSuchKey {
        command: cmd.label(),
        time,
        keys: c.key_postures.iter().map(|k| k.time).collect(),
    }
}

/// Where a key at `time` goes to keep the keys sorted.
fn key_slot(keys: &[KeyPosture], time: f32) -> usize {
    keys.partition_point(|k| k.time < time)
}

// Key postures (the timeline).

/// Applies [`Command::SetKey`]: puts a key with `posture` and the
/// Kochanek–Bartels `tension`, `continuity` and `bias` at `time`, replacing
/// the key already there.
pub(super) fn set_key(
    c: &mut Character,
    cmd: &Command,
    time: f32,
    posture: &Posture,
    [tension, continuity, bias]: [f32; 3],
) -> Result<Inverse, EditError> {
    check_key_time(cmd, "time", time)?;
    c.check_posture(posture)
        .map_err(|e| invalid(cmd, &format!("posture.{}", e.field), e.message))?;
    check_tcb(
        cmd,
        [
            ("tension", tension),
            ("continuity", continuity),
            ("bias", bias),
        ],
    )?;
    let key = KeyPosture {
        time,
        posture: posture.clone(),
        tension,
        continuity,
        bias,
    };
    let old = find_key(c, time).map(|i| (i, c.key_postures.remove(i)));
    let at = key_slot(&c.key_postures, time);
    c.key_postures.insert(at, key);
    Ok(Inverse::Keys {
        remove: Some(at),
        insert: old,
    })
}

/// Applies [`Command::MoveKey`]: moves the key at `from` to `to`, keeping the
/// keys sorted; refused when another key lies at `to`.
pub(super) fn move_key(
    c: &mut Character,
    cmd: &Command,
    from: f32,
    to: f32,
) -> Result<Inverse, EditError> {
    check_key_time(cmd, "to", to)?;
    let i = find_key(c, from).ok_or_else(|| no_such_key(c, cmd, from))?;
    if let Some((k, other)) = c
        .key_postures
        .iter()
        .enumerate()
        .find(|(k, o)| *k != i && (o.time - to).abs() < KEY_TIME_EPSILON)
    {
        return Err(refused(
            cmd,
            format!(
                "key {k} already lies at {} s: a key cannot be moved onto another \
                 (delete that one first)",
                other.time
            ),
        ));
    }
    let old = c.key_postures.remove(i);
    let mut moved = old.clone();
    moved.time = to;
    let at = key_slot(&c.key_postures, to);
    c.key_postures.insert(at, moved);
    Ok(Inverse::Keys {
        remove: Some(at),
        insert: Some((i, old)),
    })
}

/// Applies [`Command::DeleteKey`]: removes the key at `time`.
pub(super) fn delete_key(
    c: &mut Character,
    cmd: &Command,
    time: f32,
) -> Result<Inverse, EditError> {
    let i = find_key(c, time).ok_or_else(|| no_such_key(c, cmd, time))?;
    let old = c.key_postures.remove(i);
    Ok(Inverse::Keys {
        remove: None,
        insert: Some((i, old)),
    })
}

/// Applies [`Command::SetKeyTcb`]: the Kochanek–Bartels `tension`,
/// `continuity` and `bias` of the key at `time`.
pub(super) fn set_key_tcb(
    c: &mut Character,
    cmd: &Command,
    time: f32,
    [tension, continuity, bias]: [f32; 3],
) -> Result<Inverse, EditError> {
    let i = find_key(c, time).ok_or_else(|| no_such_key(c, cmd, time))?;
    check_tcb(
        cmd,
        [
            ("tension", tension),
            ("continuity", continuity),
            ("bias", bias),
        ],
    )?;
    let key = &mut c.key_postures[i];
    let old = key.clone();
    key.tension = tension;
    key.continuity = continuity;
    key.bias = bias;
    Ok(Inverse::Keys {
        remove: Some(i),
        insert: Some((i, old)),
    })
}
