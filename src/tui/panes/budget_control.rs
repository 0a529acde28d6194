//! The Budget pane as a control: the rows a key can act on (a chat file, a command
//! output, the section of either, the repo map, the history), the question each key
//! asks first with the tokens it frees, and the ops it sends. The engine does the work,
//! as `/drop`, `/read-only`, `/drop-output`, `/map-tokens` and `/compact` do it.

use crate::engine::Op;
use crate::engine::protocol::{BudgetReport, Command, FileMode, Section};
use crate::tui::keymap::{Action, Keymap};
use crate::tui::text::thousands;

/// A row of the gauge a key acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A section's row: the files or outputs in it, the repo map, the history.
    Section(Section),
    /// One file's or command output's row (shown with the per-file rows).
    Item { section: Section, name: String },
}

impl Target {
    /// The section's row, or an item's, when a key can act on it.
    pub(crate) fn of_section(section: Section) -> Option<Target> {
        matches!(
            section,
            Section::ChatFiles
                | Section::ReadonlyFiles
                | Section::CommandOutput
                | Section::Repo
                | Section::Done
        )
        .then_some(Target::Section(section))
    }

    pub(crate) fn of_item(section: Section, name: &str) -> Option<Target> {
        matches!(
            section,
            Section::ChatFiles | Section::ReadonlyFiles | Section::CommandOutput
        )
        .then(|| Target::Item {
            section,
            name: name.to_string(),
        })
    }

    /// The keys that act on it, with what each does to it, for the pane's footer.
    pub(crate) fn keys(&self) -> &'static [(Action, &'static str)] {
        match self {
            Target::Section(Section::ChatFiles) => &[
                (Action::DropRow, "drop all"),
                (Action::ReadOnlyRow, "all read-only"),
                (Action::ToggleFileRows, "each file"),
            ],
            Target::Section(Section::ReadonlyFiles | Section::CommandOutput) => &[
                (Action::DropRow, "drop all"),
                (Action::ToggleFileRows, "each one"),
            ],
            Target::Section(Section::Repo) => {
                &[(Action::ShrinkMap, "halve"), (Action::DropRow, "off")]
            }
            Target::Section(Section::Done) => &[(Action::CompactHistory, "summarize now")],
            Target::Item {
                section: Section::ChatFiles,
                ..
            } => &[
                (Action::DropRow, "drop"),
                (Action::ReadOnlyRow, "read-only"),
            ],
            Target::Item { .. } => &[(Action::DropRow, "drop")],
            Target::Section(_) => &[],
        }
    }
}

/// The footer: the selected row's keys (`s halve · d off`), then moving.
pub(crate) fn footer(target: Option<&Target>, keymap: &Keymap) -> String {
    let mut parts: Vec<String> = target
        .map(Target::keys)
        .unwrap_or_default()
        .iter()
        .map(|(action, what)| format!("{} {what}", keymap.describe(*action)))
        .collect();
    parts.push(format!(
        "{}/{} select",
        keymap.describe(Action::Down),
        keymap.describe(Action::Up)
    ));
    parts.join(" · ")
}

/// What `action` on `target` would do, as the status line asks it (`drop src/a.rs (1,204
/// tok) from the chat?`), with the tokens it frees; None when it does nothing there.
pub(crate) fn question(action: Action, target: &Target, report: &BudgetReport) -> Option<String> {
    let tokens = |t: usize| format!("{} tok", thousands(t));
    match (action, target) {
        (Action::DropRow, Target::Item { section, name }) => {
            // The last one of its section takes the section's framing with it.
            let freed = tokens(match items(report, *section).count() {
                1 => report.section(*section),
                _ => item_tokens(report, *section, name),
            });
            Some(match section {
                Section::CommandOutput => {
                    format!("drop the output of `{}`? frees {freed}", command_of(name))
                }
                _ => format!("drop {name} from the chat? frees {freed}"),
            })
        }
        (Action::DropRow, Target::Section(section)) => {
            let freed = tokens(report.section(*section));
            let count = items(report, *section).count();
            match section {
                Section::ChatFiles | Section::ReadonlyFiles if count > 0 => Some(format!(
                    "drop the {}? frees {freed}",
                    files_in(*section, count)
                )),
                Section::CommandOutput if count > 0 => Some(format!(
                    "drop {}? frees {freed}",
                    crate::plural::count(count, "command output")
                )),
                Section::Repo => Some(format!("turn the repo map off? frees {freed}")),
                _ => None,
            }
        }
        (
            Action::ReadOnlyRow,
            Target::Item {
                section: Section::ChatFiles,
                name,
            },
        ) => Some(format!(
            "make {name} read-only? frees 0 tok: the model still reads it"
        )),
        (Action::ReadOnlyRow, Target::Section(Section::ChatFiles)) => {
            let count = items(report, Section::ChatFiles).count();
            (count > 0).then(|| {
                format!(
                    "make the {} read-only? frees 0 tok: the model still reads them",
                    files_in(Section::ChatFiles, count),
                )
            })
        }
        (Action::ShrinkMap, Target::Section(Section::Repo)) => {
            let map = report.map.as_ref()?;
            let half = map.tokens / 2;
            (half > 0).then(|| {
                format!(
                    "halve the repo map, {} → at most {} tokens? frees at least {}",
                    thousands(map.tokens),
                    thousands(half),
                    tokens(map.tokens - half)
                )
            })
        }
        (Action::CompactHistory, Target::Section(Section::Done)) => {
            let history = report.section(Section::Done);
            (history > 0).then(|| {
                format!(
                    "summarize the history ({}) now? frees what the summary does not take",
                    tokens(history)
                )
            })
        }
        _ => None,
    }
}

/// The ops `action` on `target` sends (those the question asked about).
pub(crate) fn ops(action: Action, target: &Target, report: &BudgetReport) -> Vec<Op> {
    let command = |command, args: String| Op::Command { command, args };
    match (action, target) {
        (Action::DropRow, Target::Item { section, name }) => match section {
            Section::CommandOutput => vec![command(Command::DropOutput, command_of(name).into())],
            _ => vec![Op::DropFile { path: name.clone() }],
        },
        (Action::DropRow, Target::Section(Section::CommandOutput)) => {
            vec![command(Command::DropOutput, String::new())]
        }
        (
            Action::DropRow,
            Target::Section(section @ (Section::ChatFiles | Section::ReadonlyFiles)),
        ) => items(report, *section)
            .map(|path| Op::DropFile { path: path.into() })
            .collect(),
        (Action::DropRow, Target::Section(Section::Repo)) => {
            vec![command(Command::MapTokens, "0".into())]
        }
        (Action::ReadOnlyRow, Target::Item { name, .. }) => vec![Op::SetFileMode {
            path: name.clone(),
            mode: FileMode::ReadOnly,
        }],
        (Action::ReadOnlyRow, Target::Section(Section::ChatFiles)) => {
            items(report, Section::ChatFiles)
                .map(|path| Op::SetFileMode {
                    path: path.into(),
                    mode: FileMode::ReadOnly,
                })
                .collect()
        }
        (Action::ShrinkMap, Target::Section(Section::Repo)) => report
            .map
            .as_ref()
            .map(|map| vec![command(Command::MapTokens, (map.tokens / 2).to_string())])
            .unwrap_or_default(),
        (Action::CompactHistory, Target::Section(Section::Done)) => {
            vec![command(Command::Compact, String::new())]
        }
        _ => vec![],
    }
}

/// The names of the rows in `section` (paths, or `$ CMD` for outputs).
fn items(report: &BudgetReport, section: Section) -> impl Iterator<Item = &str> {
    report
        .files
        .iter()
        .filter(move |f| f.section == section)
        .map(|f| f.path.as_str())
}

fn item_tokens(report: &BudgetReport, section: Section, name: &str) -> usize {
    report
        .files
        .iter()
        .find(|f| f.section == section && f.path == name)
        .map_or(0, |f| f.tokens)
}

/// The command an output's row names (`$ cargo test`).
fn command_of(name: &str) -> &str {
    crate::engine::protocol::output_command(name)
}

/// `2 editable files`, `the read-only file`.
fn files_in(section: Section, count: usize) -> String {
    let kind = match section {
        Section::ChatFiles => "editable",
        _ => "read-only",
    };
    match count {
        1 => format!("{kind} file"),
        n => format!("{n} {kind} files"),
    }
}
