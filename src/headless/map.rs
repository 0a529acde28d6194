//! `tern map`: prints the repo map the model would see, as text or JSON, with optional
//! counts and timings on stderr.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::cli::{GlobalArgs, MapArgs};
use crate::config::Settings;
use crate::egress::errln;
use crate::llm::ModelInfo;
use crate::repomap::{self, CacheLocation, GraphStats, MapResult, RefreshStats, RepoMap};
use crate::tokens::TokenCounter;

/// Runs `tern map` in the repository containing `cwd` (or `cwd` itself outside git);
/// errors go to stderr and give exit code 1.
pub fn run(args: &MapArgs, global: &GlobalArgs, settings: &Settings, cwd: &Path) -> ExitCode {
    let signals = super::StopLine::watch("tern map");
    signals.end(match map(args, global, settings, cwd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("tern map: {}", crate::egress::error_text(&e));
            ExitCode::FAILURE
        }
    })
}

fn map(args: &MapArgs, global: &GlobalArgs, settings: &Settings, cwd: &Path) -> anyhow::Result<()> {
    let total = Instant::now();
    let root = match git2::Repository::discover(cwd) {
        Ok(repo) => repo.workdir().unwrap_or(cwd).to_path_buf(),
        Err(_) => {
            errln!(
                "tern map: warning: {} is not inside a git repository: this is the map of the files under it",
                cwd.display()
            );
            cwd.to_path_buf()
        }
    };
    let model = ModelInfo::lookup(&settings.model);
    let counter = model.token_counter();
    let mut map = RepoMap::open(&root, counter.clone(), CacheLocation::UserCacheDir)?;
    // Bad paths fail before the (possibly long) first extraction.
    let mut chat = Vec::new();
    for file in &args.chat {
        let rel = crate::repomap::relative_path(map.root(), cwd, file).with_context(|| {
            format!(
                "--chat {}: not inside {}",
                file.display(),
                map.root().display()
            )
        })?;
        chat.push((file, rel));
    }
    let refresh = map.refresh(&|_| {});
    if let Some((file, _)) = chat.iter().find(|(_, rel)| !map.files().contains(rel)) {
        bail!("--chat {}: not a file of the repository", file.display());
    }
    let chat: Vec<String> = chat.into_iter().map(|(_, rel)| rel).collect();
    let mut mentioned_files = Vec::new();
    let mut mentioned_idents = Vec::new();
    for name in &args.mention {
        let found = map.mentions(name);
        if found.files.is_empty() && found.idents.is_empty() {
            // Unknown names still weigh: an identifier only a chat file defines, say.
            mentioned_idents.push(name.clone());
        }
        mentioned_files.extend(found.files);
        mentioned_idents.extend(found.idents);
    }

    let window = settings
        .context_window
        .unwrap_or(model.max_input.unwrap_or(model.context_window));
    let budget = args
        .tokens
        .or(settings.map_tokens)
        .unwrap_or_else(|| repomap::default_budget(window, !chat.is_empty()));
    let result = map.build(&chat, &mentioned_files, &mentioned_idents, budget);
    // An empty map prints nothing, which alone looks like a map that failed.
    if result.text.is_empty() && !global.json {
        if map.files().is_empty() {
            errln!(
                "tern map: the map is empty: no file under {}",
                root.display()
            );
        } else {
            errln!("tern map: the map is empty: no file outside the chat fits in {budget} tokens");
        }
    }

    match print(&result, global.json, budget, &counter) {
        // `tern map | head` is fine: the reader has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }

    if args.stats {
        let took = total.elapsed();
        print_stats(&refresh, &result, &counter, took, map.graph_stats());
        let (segments, bytes) = map.store_usage();
        errln!(
            "store: {segments} segments, {:.1} MB (shared by every checkout)",
            bytes as f64 / 1e6
        );
    }
    Ok(())
}

fn print(
    result: &MapResult,
    json: bool,
    budget: usize,
    counter: &TokenCounter,
) -> std::io::Result<()> {
    let mut out = crate::egress::stdout();
    if json {
        let json = super::json::MapFile {
            text: &result.text,
            tokens: result.tokens,
            budget,
            encoding: counter.encoding().name(),
            estimate: counter.is_estimate(),
            files: result
                .ranked_files
                .iter()
                .map(|(path, score)| super::json::Ranked {
                    path,
                    score: *score,
                })
                .collect(),
        };
        super::json::print_line(&mut out, json)?;
    } else {
        out.write_all(result.text.as_bytes())?;
    }
    out.flush()
}

/// `took`: the whole run until the map was printed; `graph` was built for these stats
/// if the map was reused.
fn print_stats(
    r: &RefreshStats,
    result: &MapResult,
    counter: &TokenCounter,
    took: std::time::Duration,
    graph: GraphStats,
) {
    let budget = result.budget;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    errln!(
        "files: {} seen, {} parsed, {} from cache, {} from the store, {} hashed, {} skipped ({} binary, {} over 1 MB, {} unreadable)",
        r.files_seen,
        r.parsed,
        r.from_cache,
        r.from_store,
        r.hashed,
        r.skipped_binary + r.skipped_large + r.unreadable,
        r.skipped_binary,
        r.skipped_large,
        r.unreadable
    );
    errln!(
        "tags: {} definitions, {} referenced names; graph: {} identifiers, {} edges",
        r.definitions,
        r.references,
        graph.identifiers,
        graph.edges
    );
    let left_out: Vec<String> = result
        .left_out
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    errln!(
        "left out: {}",
        if left_out.is_empty() {
            "nothing".to_string()
        } else {
            left_out.join(", ")
        }
    );
    errln!(
        "collapsed: {} into {}",
        crate::plural::count(result.collapsed_files, "file"),
        crate::plural::count(result.collapsed, "line")
    );
    if let Some(why) = &r.cache_discarded {
        errln!("cache: discarded ({why}), rebuilt");
    }
    errln!(
        "map: {} of {} tokens{}, {} definitions in {} files, {} important files",
        result.tokens,
        budget,
        if counter.is_estimate() {
            " (estimate)"
        } else {
            ""
        },
        result.shown_defs,
        result.shown_files,
        result.important.len()
    );
    let fit = if result.reused {
        format!(
            "the last map reused {:.1} ms",
            ms(result.rank_time + result.fit_time)
        )
    } else {
        format!(
            "rank {:.1} ms, fit+render {:.1} ms",
            ms(result.rank_time),
            ms(result.fit_time)
        )
    };
    errln!(
        "time: scan+load {:.1} ms, parse {:.1} ms, index {:.1} ms, save {:.1} ms, {fit}, total {:.1} ms",
        ms(r.scan),
        ms(r.parse),
        ms(r.index),
        ms(r.save),
        ms(took)
    );
}
