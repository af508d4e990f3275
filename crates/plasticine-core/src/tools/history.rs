//! Undo/redo over [`Command`]s, with the working posture and an edit counter.

use super::apply::{self, Inverse};
use super::command::{Command, EditError};
use super::symmetry::Symmetry;
use crate::character::{Character, Posture};

/// One undo step: the commands applied together and their inverses, in
/// order. A step past the memory budget keeps its commands (the session
/// they record) and drops its inverses: it can no longer be undone.
#[derive(Clone, Debug)]
struct Step {
    commands: Vec<Command>,
    inverses: Vec<Inverse>,
    /// Bytes the inverses hold (see [`Inverse::bytes`]).
    bytes: usize,
}

impl Step {
    fn new(commands: Vec<Command>, inverses: Vec<Inverse>) -> Self {
        let bytes = inverses.iter().map(Inverse::bytes).sum();
        Self {
            commands,
            inverses,
            bytes,
        }
    }
}

/// The undo history's default memory budget: 512 MiB of inverse data, a
/// few hundred whole-skin edits of a 128×128 skin.
pub const DEFAULT_UNDO_BUDGET: usize = 512 << 20;

/// The edit history of one character.
///
/// It also owns the *working posture*: the posture the animator sees and
/// builds in (joint positions of [`Command::AddJoint`], the wrap of
/// [`Command::AddSkin`], the attach of [`Command::GlobalAttach`] are all
/// taken in it). The [`Character`] has no such field (its postures are the
/// animation keys), and an IK drag (§6.1) changes it through
/// [`Command::SetPosture`], so posing is undoable like any other edit.
///
/// Undo keeps per-command inverse data (see [`Command`] and the module
/// docs for each one's cost); redo re-applies the undone commands, which is
/// exact because every command is a deterministic function of the state that
/// undo restored exactly. Applying a new edit clears the redo stack.
///
/// The inverses are bounded by a memory budget ([`History::set_budget`]):
/// past it, the oldest steps are forgotten (they stay in
/// [`History::recorded`] but can no longer be undone), so a session of
/// thousands of edits holds steady. The newest step is always kept.
#[derive(Clone, Debug)]
pub struct History {
    posture: Posture,
    done: Vec<Step>,
    undone: Vec<Vec<Command>>,
    revision: u64,
    /// The steps of `done` before this index are forgotten.
    forgotten: usize,
    /// Bytes the undoable steps' inverses hold, and the most they may.
    held: usize,
    budget: usize,
    /// Whether forgotten steps keep their commands for [`History::recorded`]
    /// (a session being recorded needs them; otherwise they go entirely).
    record: bool,
}

impl History {
    /// A history starting from the character's rest posture.
    pub fn new(character: &Character) -> Self {
        Self::with_posture(character.skeleton.rest_posture())
    }

    /// A history starting from a given working posture (one angle per joint).
    pub fn with_posture(posture: Posture) -> Self {
        Self {
            posture,
            done: Vec::new(),
            undone: Vec::new(),
            revision: 0,
            forgotten: 0,
            held: 0,
            budget: DEFAULT_UNDO_BUDGET,
            record: true,
        }
    }

    /// Sets the memory budget of the undo data (bytes), forgetting the
    /// oldest steps now if they are over it.
    pub fn set_budget(&mut self, bytes: usize) {
        self.budget = bytes;
        self.trim();
    }

    /// Whether steps past the budget keep their commands (the default), so
    /// that [`History::recorded`] is the whole session, or go entirely: with
    /// no session being recorded, nothing grows with the length of the
    /// session.
    pub fn keep_record(&mut self, keep: bool) {
        self.record = keep;
        self.trim();
    }

    /// The memory budget of the undo data (bytes).
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes the undo data holds now (at most the budget, or the newest
    /// step alone when that is larger).
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Steps forgotten to keep to the budget (still recorded, no longer
    /// undoable).
    pub fn forgotten_steps(&self) -> usize {
        self.forgotten
    }

    /// Forgets the oldest undoable steps while the undo data is over budget,
    /// keeping the newest.
    fn trim(&mut self) {
        while self.held > self.budget && self.forgotten + 1 < self.done.len() {
            let step = &mut self.done[self.forgotten];
            self.held -= step.bytes;
            step.bytes = 0;
            step.inverses = Vec::new();
            self.forgotten += 1;
        }
        if !self.record && self.forgotten > 0 {
            self.done.drain(..self.forgotten);
            self.forgotten = 0;
        }
    }

    /// Pushes an applied step and keeps to the budget.
    fn push(&mut self, step: Step) {
        self.held += step.bytes;
        self.done.push(step);
        self.trim();
    }

    /// The working posture.
    pub fn posture(&self) -> &Posture {
        &self.posture
    }

    /// Counts every change (apply, undo, redo); autosave saves when it
    /// differs from the revision it last saved. Refused edits leave it alone.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether there is a step to undo.
    pub fn can_undo(&self) -> bool {
        self.done.len() > self.forgotten
    }

    /// Whether there is an undone step to redo.
    pub fn can_redo(&self) -> bool {
        !self.undone.is_empty()
    }

    /// Number of undo steps available.
    pub fn undo_depth(&self) -> usize {
        self.done.len() - self.forgotten
    }

    /// Every command in effect, oldest first: replaying them with
    /// [`History::apply`] on the starting character rebuilds the current one
    /// (unless [`History::keep_record`] let forgotten steps go).
    pub fn recorded(&self) -> Vec<Command> {
        self.done
            .iter()
            .flat_map(|s| s.commands.iter().cloned())
            .collect()
    }

    /// Applies one command as one undo step.
    pub fn apply(&mut self, character: &mut Character, cmd: Command) -> Result<(), EditError> {
        self.apply_group(character, vec![cmd])
    }

    /// Applies several commands as one undo step, all or nothing: if one is
    /// refused, those before it are taken back and the error is returned.
    pub fn apply_group(
        &mut self,
        character: &mut Character,
        commands: Vec<Command>,
    ) -> Result<(), EditError> {
        let inverses = self.run(character, &commands)?;
        self.push(Step::new(commands, inverses));
        self.undone.clear();
        self.revision += 1;
        Ok(())
    }

    /// Applies a command as part of the last undo step, so a continuous
    /// gesture (a liposuction spray held down for many frames, §6.3) undoes as
    /// one. Starts a new step when there is none.
    pub fn apply_continuing(
        &mut self,
        character: &mut Character,
        cmd: Command,
    ) -> Result<(), EditError> {
        if !self.can_undo() {
            return self.apply(character, cmd);
        }
        let inverse = apply::apply(character, &mut self.posture, &cmd)?;
        let bytes = inverse.bytes();
        let last = self.done.last_mut().expect("an undoable step");
        last.commands.push(cmd);
        last.inverses.push(inverse);
        last.bytes += bytes;
        self.held += bytes;
        self.trim();
        self.undone.clear();
        self.revision += 1;
        Ok(())
    }

    /// Applies `cmd` and its mirror image under `symmetry` as one undo step
    /// (see [`Symmetry::pair`]). Returns the mirrored command that was
    /// applied, or `None` when the edit is its own mirror image or has no
    /// counterpart.
    pub fn apply_symmetric(
        &mut self,
        character: &mut Character,
        cmd: Command,
        symmetry: &Symmetry,
    ) -> Result<Option<Command>, EditError> {
        let (primary, mirrored) = symmetry.pair(&cmd, character, &self.posture);
        let group = match &mirrored {
            None => vec![primary],
            Some(m) => {
                // Deletions shift later indices: delete the later one first so
                // both indices computed on the current state stay valid.
                let later_first = match (&primary, m) {
                    (Command::DeleteJoint { joint: a }, Command::DeleteJoint { joint: b })
                    | (Command::DeleteSkin { skin: a }, Command::DeleteSkin { skin: b }) => b > a,
                    _ => false,
                };
                if later_first {
                    vec![m.clone(), primary]
                } else {
                    vec![primary, m.clone()]
                }
            }
        };
        self.apply_group(character, group)?;
        Ok(mirrored)
    }

    /// Takes back the last step.
    pub fn undo(&mut self, character: &mut Character) -> Result<(), EditError> {
        if !self.can_undo() {
            return Err(EditError::NothingToUndo);
        }
        let step = self.done.pop().expect("an undoable step");
        self.held -= step.bytes;
        for inverse in step.inverses.into_iter().rev() {
            apply::revert(character, &mut self.posture, inverse);
        }
        self.undone.push(step.commands);
        self.revision += 1;
        Ok(())
    }

    /// Re-applies the last undone step.
    pub fn redo(&mut self, character: &mut Character) -> Result<(), EditError> {
        let commands = self.undone.pop().ok_or(EditError::NothingToRedo)?;
        match self.run(character, &commands) {
            Ok(inverses) => {
                self.push(Step::new(commands, inverses));
                self.revision += 1;
                Ok(())
            }
            Err(e) => {
                // Only if the character was changed behind the history's back.
                self.undone.push(commands);
                Err(e)
            }
        }
    }

    /// Applies commands in order; on a refusal takes back the ones applied.
    fn run(
        &mut self,
        character: &mut Character,
        commands: &[Command],
    ) -> Result<Vec<Inverse>, EditError> {
        let mut inverses = Vec::with_capacity(commands.len());
        for cmd in commands {
            match apply::apply(character, &mut self.posture, cmd) {
                Ok(inv) => inverses.push(inv),
                Err(e) => {
                    for inv in inverses.into_iter().rev() {
                        apply::revert(character, &mut self.posture, inv);
                    }
                    return Err(e);
                }
            }
        }
        Ok(inverses)
    }
}
