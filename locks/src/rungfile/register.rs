//! A rung file as a rung: its metadata for listings and its registration.

use super::format::{Call, Nodes, Operation, Outcome, Quorum};
use super::{Capture, Placeholder, RungFile, ScriptedLock};
use crate::Rung;
use crate::lock::Lock;
use crate::registry::{RegisterError, Registration};
use std::sync::Arc;

impl RungFile {
    /// The rung's metadata (leaked once per rung file registered: it
    /// lives as long as the process, like the ladder's).
    fn metadata(&self) -> &'static Rung {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let summary = |op: &Operation| match &op.call {
            Call::Command(_) => format!("one command ({} of {})", op.kind.name(), self.file),
            Call::Script { .. } => format!("a Lua script ({} of {})", op.kind.name(), self.file),
        };
        let any_uses = |value| {
            [
                Some(&self.acquire),
                Some(&self.release),
                self.extend.as_ref(),
            ]
            .into_iter()
            .flatten()
            .any(|op| op.uses(value))
        };
        Box::leak(Box::new(Rung {
            id: leak(self.id.clone()),
            acquire: leak(summary(&self.acquire)),
            release: leak(summary(&self.release)),
            fixes: leak(self.fixes.clone()),
            flaw: leak(self.flaw.clone()),
            shown_by: "",
            multi_node: matches!(self.nodes, Nodes::Independent { .. }),
            fencing: self.acquire.captures(Outcome::Granted, Capture::Fence),
            publishes: any_uses(Placeholder::Channel),
            reentrant: self.acquire.captures(Outcome::Granted, Capture::Depth),
            renews: self.renewal.is_some(),
            ..Rung::OFF_LADDER
        }))
    }

    /// The fewest nodes it can work on: its quorum, for a fixed one.
    pub fn min_nodes(&self) -> usize {
        match self.nodes {
            Nodes::Independent {
                quorum: Quorum::AtLeast(n),
                ..
            } => n,
            _ => 1,
        }
    }

    /// Registers the rung under its id, so that every command and
    /// scenario knows it ([`crate::register`]). The same file registered
    /// again is no change.
    pub fn register(self) -> Result<&'static Rung, RegisterError> {
        if let Some(known) = crate::registry::registered_source(&self.id, &self.text) {
            return Ok(known.rung);
        }
        let rung = self.metadata();
        let plays = self.plays;
        let text = self.text.clone();
        let min_nodes = self.min_nodes();
        let file = Arc::new(self);
        let mut registration = Registration::new(rung, move |parts| {
            Box::new(ScriptedLock::new(file.clone(), rung, parts)) as Box<dyn Lock>
        })
        .from_source(&text)
        .needing(min_nodes);
        if let Some(plays) = plays {
            registration = registration.playing(plays);
        }
        crate::registry::register(registration)?;
        Ok(rung)
    }
}
