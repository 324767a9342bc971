//! The one state-machine driver of the generated Rust machines (the Rust twin of
//! `runtime/machine.py` and `runtime/typescript/src/machine.ts`): the machines themselves
//! are generated tables, as data.
//!
//! A table is a slice of [`Key`]s, one per (state, frame kind or [`None`] for the IDL's
//! `*`), each with its [`Row`]s. [`lookup`] applies the first row whose guard accepts the
//! frame (no guard: always); when no row of the frame's kind matches, the state's `*`
//! rows decide by their first row's outcome (its guard is not consulted, as in Python);
//! when there are none either the event is illegal. A generated machine turns an illegal
//! event into a [`MachineError`], which prints Python's message.

use core::fmt;

/// What a row says about an event: the machine moves to a state, ignores the frame, or
/// refuses it with the IDL's reason and citation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<S: 'static> {
    /// The machine moves to this state.
    To(S),
    /// The spec says to drop the frame; the machine stays where it is.
    Ignore,
    /// The IDL marks the event as breaking a rule.
    Illegal(Illegal),
}

/// The reason and citation of a row the IDL marks as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Illegal {
    /// Why the event breaks the protocol.
    pub message: &'static str,
    /// Where the spec says so.
    pub spec: &'static str,
}

/// One row of a table: its guard (`None`: always applies) and its outcome.
#[derive(Debug, Clone, Copy)]
pub struct Row<S: 'static, G: 'static> {
    /// The condition on the frame, a generated function.
    pub guard: Option<G>,
    /// What happens when the guard accepts the frame.
    pub outcome: Outcome<S>,
}

/// The rows of one state and frame kind (`frame: None`: the IDL's `*`, any frame no
/// other key of the state matched).
#[derive(Debug, Clone, Copy)]
pub struct Key<S: 'static, K: 'static, G: 'static> {
    /// The state the rows apply in.
    pub state: S,
    /// The frame kind they apply to; `None` for any frame.
    pub frame: Option<K>,
    /// The rows, tried in order.
    pub rows: &'static [Row<S, G>],
}

/// The outcome of `frame` (of kind `kind`) in `state` by `table`: the first row of
/// (`state`, `kind`) whose guard `accepts` it, else the first `*` row of `state`, else
/// `None` (illegal: no row says anything).
pub fn lookup<S: Copy + PartialEq, K: PartialEq, G>(
    table: &[Key<S, K, G>],
    state: S,
    kind: K,
    accepts: impl Fn(&G) -> bool,
) -> Option<Outcome<S>> {
    let mut any = None;
    for key in table {
        if key.state != state {
            continue;
        }
        match &key.frame {
            Some(frame) if *frame == kind => {
                for row in key.rows {
                    if row.guard.as_ref().is_none_or(&accepts) {
                        return Some(row.outcome);
                    }
                }
            }
            None if any.is_none() => any = key.rows.first().map(|row| row.outcome),
            _ => {}
        }
    }
    any
}

/// Which side broke a machine's rules: Python's classes of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Sending this frame now breaks the machine (this side is at fault).
    IllegalSend,
    /// The peer sent a frame its state does not allow (and the spec does not say ignore).
    UnexpectedFrame,
}

/// A machine refused an event; `Display` prints Python's message for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineError {
    /// `IllegalSend` or `UnexpectedFrame`.
    pub kind: Refusal,
    /// The machine's IDL name.
    pub machine: &'static str,
    /// The role the machine was driven as.
    pub role: &'static str,
    /// The state it was in (the IDL's name).
    pub state: &'static str,
    /// The frame's class name.
    pub frame: &'static str,
    /// The IDL's reason, when a row refused the event (`None`: no row matched).
    pub reason: Option<&'static str>,
    /// Where the spec says so (empty when no row matched).
    pub spec: &'static str,
}

impl MachineError {
    /// The error for `outcome` (an `Illegal` row, or none) of a machine.
    pub fn new(
        kind: Refusal,
        machine: &'static str,
        role: &'static str,
        state: &'static str,
        frame: &'static str,
        illegal: Option<Illegal>,
    ) -> Self {
        MachineError {
            kind,
            machine,
            role,
            state,
            frame,
            reason: illegal.map(|i| i.message),
            spec: illegal.map_or("", |i| i.spec),
        }
    }

    /// The name of Python's (and TypeScript's) class for this error.
    pub fn class_name(&self) -> &'static str {
        match self.kind {
            Refusal::IllegalSend => "IllegalSend",
            Refusal::UnexpectedFrame => "UnexpectedFrame",
        }
    }
}

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.kind {
            Refusal::IllegalSend => "send",
            Refusal::UnexpectedFrame => "receive",
        };
        let (name, role, state, machine) = (self.frame, self.role, self.state, self.machine);
        match self.reason {
            None => write!(f, "can't ")?,
            Some(reason) => write!(f, "{reason} (")?,
        }
        write!(
            f,
            "{verb} {name} when role={role} and state={state} (machine {machine})"
        )?;
        if self.reason.is_some() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for MachineError {}

/// What receiving a frame did: the machine moved (or stayed) in a state, or ignored it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received<S> {
    /// The machine took the frame and is now in this state.
    To(S),
    /// The spec says to drop the frame; the machine did not move.
    Ignored,
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    type Guard = fn(&u8) -> bool;

    fn even(frame: &u8) -> bool {
        frame.is_multiple_of(2)
    }

    const ILLEGAL: Illegal = Illegal {
        message: "no",
        spec: "s",
    };
    static TABLE: &[Key<u8, char, Guard>] = &[
        Key {
            state: 0,
            frame: Some('a'),
            rows: &[Row {
                guard: Some(even),
                outcome: Outcome::To(1),
            }],
        },
        Key {
            state: 0,
            frame: None,
            rows: &[Row {
                guard: None,
                outcome: Outcome::Illegal(ILLEGAL),
            }],
        },
        Key {
            state: 1,
            frame: Some('a'),
            rows: &[Row {
                guard: None,
                outcome: Outcome::Ignore,
            }],
        },
    ];

    #[test]
    fn first_accepting_row_then_any_then_none() {
        assert_eq!(lookup(TABLE, 0, 'a', |g| g(&2)), Some(Outcome::To(1)));
        let refused = Some(Outcome::Illegal(ILLEGAL));
        assert_eq!(lookup(TABLE, 0, 'a', |g| g(&3)), refused);
        assert_eq!(lookup(TABLE, 0, 'b', |g| g(&2)), refused);
        assert_eq!(lookup(TABLE, 1, 'a', |g| g(&3)), Some(Outcome::Ignore));
        assert_eq!(lookup(TABLE, 1, 'b', |g| g(&3)), None);
        assert_eq!(lookup(TABLE, 2, 'a', |g| g(&2)), None);
    }

    #[test]
    fn messages_are_pythons() {
        let e = MachineError::new(Refusal::IllegalSend, "m", "client", "new", "Setup", None);
        assert_eq!(
            e.to_string(),
            "can't send Setup when role=client and state=new (machine m)"
        );
        let e = MachineError::new(Refusal::UnexpectedFrame, "m", "r", "s", "F", Some(ILLEGAL));
        assert_eq!(e.class_name(), "UnexpectedFrame");
        assert_eq!(e.spec, "s");
        assert_eq!(
            e.to_string(),
            "no (receive F when role=r and state=s (machine m))"
        );
    }
}
