//! Token counting against OpenAI's published numbers and against tiktoken itself.

// A failed unwrap here is a failed test or benchmark, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;

use proptest::prelude::*;
use tern::tokens::{
    Encoding, MESSAGE_OVERHEAD, REPLY_PRIMING, TokenCounter, split_at_piece_boundaries,
};

/// The worked example of OpenAI's cookbook "How to count tokens with tiktoken": the API
/// reported 129 prompt tokens for gpt-4 (cl100k_base) and 124 for gpt-4o (o200k_base).
const COOKBOOK: &[(&str, Option<&str>, &str)] = &[
    (
        "system",
        None,
        "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
    ),
    (
        "system",
        Some("example_user"),
        "New synergies will help drive top-line growth.",
    ),
    (
        "system",
        Some("example_assistant"),
        "Things working well together will increase revenue.",
    ),
    (
        "system",
        Some("example_user"),
        "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
    ),
    (
        "system",
        Some("example_assistant"),
        "Let's talk later when we're less busy about how to do better.",
    ),
    (
        "user",
        None,
        "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    ),
];

fn cookbook_count(encoding: Encoding) -> usize {
    let counter = TokenCounter::new(encoding, false);
    // Messages without a name are counted by tern's own request formula; the cookbook
    // adds the name's tokens plus one for each named message.
    let contents = COOKBOOK.iter().map(|(_, _, content)| *content);
    let names: usize = COOKBOOK
        .iter()
        .filter_map(|(_, name, _)| name.map(|n| counter.count(n) + 1))
        .sum();
    counter.count_request(contents) + names
}

#[test]
fn cookbook_worked_example_matches_the_api() {
    assert_eq!(cookbook_count(Encoding::Cl100kBase), 129);
    assert_eq!(cookbook_count(Encoding::O200kBase), 124);
}

#[test]
fn message_overhead_is_three_plus_a_one_token_role() {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for role in ["system", "user", "assistant"] {
            assert_eq!(encoding.count(role), 1, "{role} in {encoding:?}");
        }
    }
    assert_eq!(MESSAGE_OVERHEAD, 3 + 1);
    assert_eq!(REPLY_PRIMING, 3);
}

/// tiktoken's reference encoders, built once: building one takes about a second.
fn tiktoken(encoding: Encoding) -> &'static tiktoken_rs::CoreBPE {
    static O200K: LazyLock<tiktoken_rs::CoreBPE> =
        LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());
    static CL100K: LazyLock<tiktoken_rs::CoreBPE> =
        LazyLock::new(|| tiktoken_rs::cl100k_base().unwrap());
    match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    }
}

/// This crate's own sources: real code, with the unicode of its own strings.
fn own_sources() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "toml") {
                out.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    out.push(include_str!("../../assets/models.toml").to_string());
    out
}

#[test]
fn counts_equal_tiktoken_on_real_source() {
    let sources = own_sources();
    assert!(sources.len() > 5);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let reference = tiktoken(encoding);
        for text in &sources {
            assert_eq!(encoding.count(text), reference.encode_ordinary(text).len());
        }
    }
}

#[test]
fn large_texts_counted_in_parallel_equal_tiktoken() {
    let big = own_sources().join("\n").repeat(3);
    assert!(big.len() > 256 * 1024, "{} bytes", big.len());
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        assert_eq!(
            encoding.count(&big),
            tiktoken(encoding).encode_ordinary(&big).len()
        );
    }
}

#[test]
fn tricky_texts_equal_tiktoken() {
    let texts = [
        "",
        " ",
        "\n\n\n",
        "    \n  \t\n",
        "fn main() {\r\n    println!(\"héllo wörld\");\r\n}\r\n",
        "日本語のテキストと emoji 🦀🚀 mixed",
        "<|endoftext|> and <|im_start|>user<|im_end|>",
        "CamelCaseIdentifiersAndsnake_case_names_123456789",
        "'s 're 've 'm 'll 'd 'S 'RE",
        "trailing spaces   ",
        "\u{feff}BOM then text",
    ];
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let reference = tiktoken(encoding);
        for text in texts {
            assert_eq!(
                encoding.count(text),
                reference.encode_ordinary(text).len(),
                "{text:?}"
            );
        }
    }
}

#[test]
fn special_token_text_is_ordinary_text() {
    let counter = TokenCounter::new(Encoding::O200kBase, false);
    let n = counter.count("before <|endoftext|> after");
    assert!(n > 5, "special-token text must be counted as text, got {n}");
}

#[test]
fn the_cache_returns_the_same_counts() {
    let counter = TokenCounter::new(Encoding::O200kBase, true);
    let text = "fn cached() -> usize { 42 }";
    let first = counter.count(text);
    let clone = counter.clone();
    assert_eq!(clone.count(text), first);
    assert_eq!(first, Encoding::O200kBase.count(text));
    assert!(counter.is_estimate());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_text_equals_tiktoken(text in "\\PC{0,200}") {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            prop_assert_eq!(encoding.count(&text), tiktoken(encoding).encode_ordinary(&text).len());
        }
    }

    #[test]
    fn piece_boundary_cuts_preserve_counts(text in "([ \\t\\r\\n]{0,3}[a-zA-Z0-9_(){};:.,'\"/<>|=!&*+-]{0,12}){0,60}") {
        let parts = split_at_piece_boundaries(&text, 1);
        prop_assert_eq!(parts.concat(), text.clone());
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let split: usize = parts.iter().map(|p| encoding.count(p)).sum();
            prop_assert_eq!(split, tiktoken(encoding).encode_ordinary(&text).len());
        }
    }

    #[test]
    fn random_code_like_text_equals_tiktoken(text in "[ \\t\\n\\r a-zA-Z0-9_(){};:.,'\"<>|=!&*+-/]{0,300}") {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            prop_assert_eq!(encoding.count(&text), tiktoken(encoding).encode_ordinary(&text).len());
        }
    }
}
