//! The prompts: every format and mode has its sections, and the few-shot examples are
//! replies tern itself applies cleanly to the files they imply.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use tern::edit::prompts::{Mode, commit_message_request, prompts};
use tern::edit::{EditFormat, FileSet, Workspace, propose};
use tern::llm::Role;

const FORMATS: [EditFormat; 3] = [EditFormat::Editblock, EditFormat::Udiff, EditFormat::Whole];

#[test]
fn every_format_and_mode_has_its_sections() {
    for format in FORMATS {
        for mode in [Mode::Code, Mode::Ask] {
            let p = prompts(format, mode);
            assert!(p.system.len() > 200, "{format} {mode:?}");
            assert!(!p.reminder.is_empty(), "{format} {mode:?}");
            let roles: Vec<Role> = p.examples.iter().map(|m| m.role).collect();
            let alternating = roles.iter().enumerate().all(|(i, r)| {
                *r == if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                }
            });
            assert!(alternating, "{format} {mode:?}: {roles:?}");
            assert!(p.examples.iter().all(|m| !m.content.trim().is_empty()));
            match mode {
                Mode::Code => assert!(!p.examples.is_empty(), "{format}"),
                Mode::Ask => assert!(p.examples.is_empty() && p.system.contains("ask mode")),
            }
        }
    }
    let eb = prompts(EditFormat::Editblock, Mode::Code);
    assert!(eb.system.contains("first occurrence"));
    assert!(eb.reminder.contains("first occurrence"));
}

#[test]
fn few_shot_examples_apply_cleanly() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/edit/prompt-examples");
    for format in FORMATS {
        for example in prompts(format, Mode::Code)
            .examples
            .iter()
            .filter(|m| m.role == Role::Assistant)
        {
            let dir = tempfile::tempdir().unwrap();
            for entry in std::fs::read_dir(&fixtures).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
            }
            let ws = Workspace::discover(dir.path()).unwrap();
            let files = FileSet::new(ws.files(), vec![]);
            let out = propose(&ws, &example.content, format, &files);
            assert!(
                out.errors.is_empty(),
                "{format}: {:#?}\n{}",
                out.errors,
                example.content
            );
            assert!(
                out.blocks > 0 && !out.proposal.is_empty(),
                "{format}: {}",
                example.content
            );
        }
    }
}

#[test]
fn commit_request_carries_the_diff() {
    let diff = "--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n";
    let msgs = commit_message_request(diff);
    assert_eq!(msgs[0].role, Role::System);
    assert!(msgs[0].content.contains("72 characters"));
    assert_eq!(msgs[1].content, format!("```diff\n{diff}```"));
    let huge = "+é\n".repeat(20_000);
    let msgs = commit_message_request(&huge);
    assert!(msgs[1].content.len() < 25_000 && msgs[1].content.contains("(diff truncated)"));
}
