//! `tern acp` driven over real pipes by the `agent-client-protocol` crate's client
//! side (code that is not tern's), the loopback server answering as the model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, LoadSessionRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCallContent, ToolCallUpdateFields,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::{MockServer, Reply, TempRepo};

/// A reply that edits two files, one hunk each (of `repo()`).
pub(crate) const TWO_FILE_EDIT: &str = "a.txt
```
<<<<<<< SEARCH
alpha
=======
ALPHA
>>>>>>> REPLACE
```

b.txt
```
<<<<<<< SEARCH
beta
=======
BETA
>>>>>>> REPLACE
```
";

pub(crate) fn repo() -> TempRepo {
    TempRepo::with_files(&[
        ("a.txt", "one\nalpha\ntwo\n"),
        ("b.txt", "three\nbeta\nfour\n"),
    ])
}

/// Git holds exactly the accepted hunk of `TWO_FILE_EDIT` (a.txt's), in tern's commit
/// on top; b.txt is untouched.
pub(crate) fn only_the_hunk_of_a_landed(repo: &TempRepo) {
    assert_eq!(repo.read("a.txt"), "one\nALPHA\ntwo\n");
    assert_eq!(repo.read("b.txt"), "three\nbeta\nfour\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        repo.git(&["show", "--format=", "--name-only", "HEAD"])
            .trim(),
        "a.txt"
    );
}

/// What a client heard from `tern acp`: every `session/update`, the files of the
/// hunks it was asked about (the titles of other questions), in order, and the files
/// tern read and wrote through it (an editor's `fs` methods).
#[derive(Default)]
pub(crate) struct Heard {
    pub(crate) updates: Vec<SessionNotification>,
    pub(crate) asked: Vec<PathBuf>,
    pub(crate) read: Vec<PathBuf>,
    pub(crate) written: Vec<PathBuf>,
    /// What each permission request showed.
    pub(crate) questions: Vec<ToolCallUpdateFields>,
}

/// An editor's buffers, by absolute path: what `fs/read_text_file` answers for a file
/// open in it (saved or not); a file not open is read from disk, as editors do.
#[derive(Clone, Default)]
pub(crate) struct Editor(Arc<Mutex<HashMap<PathBuf, String>>>);

impl Editor {
    /// `path` is open, holding `text` (unsaved when it is not the file's).
    pub(crate) fn type_in(&self, path: PathBuf, text: &str) {
        self.0.lock().unwrap().insert(path, text.to_string());
    }

    fn read(&self, path: &Path) -> Option<String> {
        let open = self.0.lock().unwrap().get(path).cloned();
        open.or_else(|| std::fs::read_to_string(path).ok())
    }
}

impl Heard {
    pub(crate) fn updates(&self) -> impl Iterator<Item = &SessionUpdate> {
        self.updates.iter().map(|n| &n.update)
    }

    /// The agent's message text, every chunk joined.
    pub(crate) fn said(&self) -> String {
        self.updates()
            .filter_map(|u| match u {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

/// Runs `main` as an ACP client (the crate's own) of `tern acp` started in `repo`,
/// over the child's stdin and stdout; a question about a hunk is answered with accept
/// where `accept` says so for its file. Returns what `main` returned and what the
/// client heard, once tern has exited.
async fn client<R>(
    repo: &TempRepo,
    server: &MockServer,
    accept: impl Fn(&Path) -> bool + Send + Sync + 'static,
    main: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, agent_client_protocol::Error>,
) -> (R, Heard) {
    client_of(repo, server, Editor::default(), accept, main).await
}

/// `client`, with `editor`'s buffers behind `fs/read_text_file` (a client that says
/// it has them: `new_session_in_editor`); `fs/write_text_file` is answered and heard.
pub(crate) async fn client_of<R>(
    repo: &TempRepo,
    server: &MockServer,
    editor: Editor,
    accept: impl Fn(&Path) -> bool + Send + Sync + 'static,
    main: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, agent_client_protocol::Error>,
) -> (R, Heard) {
    let mut command = repo.tern(&server.base_url());
    command
        .args(["--model", "gpt-4o", "acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let mut child = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let heard: Arc<Mutex<Heard>> = Arc::default();
    let (notified, asked) = (heard.clone(), heard.clone());
    let (reads, writes) = (heard.clone(), heard.clone());
    let result = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                notified.lock().unwrap().updates.push(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let mut heard = asked.lock().unwrap();
                // A hunk by its file; anything else (a command) by its title.
                let path = diff_path(heard.updates(), &request.tool_call.tool_call_id.0)
                    .or_else(|| request.tool_call.fields.title.clone().map(PathBuf::from))
                    .expect("a hunk's diff or a title");
                let kind = match accept(&path) {
                    true => PermissionOptionKind::AllowOnce,
                    false => PermissionOptionKind::RejectOnce,
                };
                heard.asked.push(path);
                heard.questions.push(request.tool_call.fields.clone());
                let option = request.options.iter().find(|o| o.kind == kind).unwrap();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        option.option_id.clone(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                reads.lock().unwrap().read.push(request.path.clone());
                match editor.read(&request.path) {
                    Some(text) => responder.respond(ReadTextFileResponse::new(text)),
                    None => responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params().data("no such file"),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                writes.lock().unwrap().written.push(request.path);
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, main);
    // A test never hangs: a client still waiting after a minute has its answer missing.
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), result)
        .await
        .unwrap_or_else(|_| {
            let said = heard.lock().unwrap().said();
            panic!("tern did not answer within a minute; it said:\n{said}")
        })
        .unwrap();
    // The client is done: tern sees its input end, saves and exits.
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("tern exits once its input ends")
        .unwrap();
    assert!(status.success(), "{status}");
    let heard = std::mem::take(&mut *heard.lock().unwrap());
    (result, heard)
}

pub(crate) fn text(text: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(text))]
}

/// Starts a session in `root` (after `initialize`).
async fn new_session(
    cx: &ConnectionTo<Agent>,
    root: &Path,
) -> Result<SessionId, agent_client_protocol::Error> {
    new_session_as(cx, root, ClientCapabilities::new()).await
}

/// Starts a session in `root` from a client that reads and writes files for agents
/// (`client_of`'s editor).
pub(crate) async fn new_session_in_editor(
    cx: &ConnectionTo<Agent>,
    root: &Path,
) -> Result<SessionId, agent_client_protocol::Error> {
    let fs = FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    new_session_as(cx, root, ClientCapabilities::new().fs(fs)).await
}

async fn new_session_as(
    cx: &ConnectionTo<Agent>,
    root: &Path,
    capabilities: ClientCapabilities,
) -> Result<SessionId, agent_client_protocol::Error> {
    let init = cx
        .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
        .block_task()
        .await?;
    assert!(init.agent_capabilities.load_session);
    Ok(cx
        .send_request(NewSessionRequest::new(root.to_path_buf()))
        .block_task()
        .await?
        .session_id)
}

pub(crate) async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &SessionId,
    words: &str,
) -> Result<StopReason, agent_client_protocol::Error> {
    Ok(cx
        .send_request(PromptRequest::new(session.clone(), text(words)))
        .block_task()
        .await?
        .stop_reason)
}

/// The tool call `id` announced in `updates`: its diff's path.
fn diff_path<'a>(
    mut updates: impl Iterator<Item = &'a SessionUpdate>,
    id: &str,
) -> Option<PathBuf> {
    updates.find_map(|update| match update {
        SessionUpdate::ToolCall(call) if &*call.tool_call_id.0 == id => {
            call.content.iter().find_map(|content| match content {
                ToolCallContent::Diff(diff) => Some(diff.path.clone()),
                _ => None,
            })
        }
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_accepts_one_hunk_and_rejects_the_other_and_git_holds_exactly_the_accepted_one() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_FILE_EDIT));
    server.push_for_model("gpt-4o-mini", Reply::text("Shout alpha"));
    server.push_for_model("gpt-4o", Reply::text("Understood."));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let a = root.join("a.txt");
    let ((), heard) = client(
        &repo,
        &server,
        move |path| path == a,
        async |cx| {
            let session = new_session(&cx, &root).await?;
            assert_eq!(
                prompt(&cx, &session, "/add a.txt b.txt").await?,
                StopReason::EndTurn
            );
            let edited = prompt(&cx, &session, "shout the greek letters").await?;
            assert_eq!(edited, StopReason::EndTurn);
            assert_eq!(prompt(&cx, &session, "why?").await?, StopReason::EndTurn);
            Ok(())
        },
    )
    .await;
    // One question per hunk, a.txt's first (the reply's order).
    assert_eq!(heard.asked, [root.join("a.txt"), root.join("b.txt")]);
    only_the_hunk_of_a_landed(&repo);
    assert_eq!(repo.git(&["show", "HEAD:a.txt"]), "one\nALPHA\ntwo\n");
    assert_eq!(repo.git(&["log", "--format=%s"]), "Shout alpha\ninitial\n");
    // Each hunk's diff holds its old and new lines with their context.
    let diffs: Vec<(Option<String>, String)> = heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call),
            _ => None,
        })
        .flat_map(|call| &call.content)
        .filter_map(|c| match c {
            ToolCallContent::Diff(d) => Some((d.old_text.clone(), d.new_text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        diffs,
        [
            (Some("one\nalpha\ntwo\n".into()), "one\nALPHA\ntwo\n".into()),
            (
                Some("three\nbeta\nfour\n".into()),
                "three\nBETA\nfour\n".into()
            ),
        ]
    );
    let said = heard.said();
    assert!(said.contains("<<<<<<< SEARCH"), "the reply streams: {said}");
    assert!(
        said.contains("applied 1 hunk to a.txt; committed"),
        "{said}"
    );
    assert!(
        heard
            .updates()
            .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_))),
        "the commands are advertised"
    );
    // The model hears which hunk was rejected with the next message.
    let requests = server.requests();
    let last = requests.iter().rev().find(|r| r.model == "gpt-4o").unwrap();
    let sent: String = last.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(sent.contains(tern::prompts::REJECTED_HUNKS), "{sent}");
    assert!(sent.contains("+BETA") && !sent.contains("+ALPHA"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_holds_two_sessions_and_a_later_one_loads_a_session_replaying_it() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("First answer."));
    server.push_for_model("gpt-4o", Reply::text("Second answer."));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let ((first, second), heard) = client(
        &repo,
        &server,
        |_| false,
        async |cx| {
            let first = new_session(&cx, &root).await?;
            assert_eq!(prompt(&cx, &first, "hello one").await?, StopReason::EndTurn);
            let second = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id;
            assert_eq!(
                prompt(&cx, &second, "hello two").await?,
                StopReason::EndTurn
            );
            Ok((first, second))
        },
    )
    .await;
    assert_ne!(first, second);
    // Each session's reply went to that session.
    let said_in = |session: &SessionId| -> String {
        heard
            .updates
            .iter()
            .filter(|n| &n.session_id == session)
            .filter_map(|n| match &n.update {
                SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    assert!(said_in(&first).contains("First answer."));
    assert!(!said_in(&first).contains("Second answer."));
    assert!(said_in(&second).contains("Second answer."));
    // The budget: the window and what the next request holds, then by section.
    let usage = heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::UsageUpdate(usage) => Some(usage),
            _ => None,
        })
        .last()
        .expect("a usage_update");
    assert!(usage.size > 0 && usage.used > 0 && usage.used < usage.size);
    let plan = heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::Plan(plan) => Some(plan),
            _ => None,
        })
        .last()
        .expect("the budget as a plan");
    let entries: Vec<&str> = plan.entries.iter().map(|e| e.content.as_str()).collect();
    assert!(
        entries.iter().any(|e| e.starts_with("system")),
        "{entries:?}"
    );
    assert!(
        entries.last().unwrap().starts_with("next request: "),
        "{entries:?}"
    );

    // Another connection (the first has ended) loads the first session: its
    // conversation comes back as updates before the answer.
    let loaded = first.clone();
    let ((), heard) = client(
        &repo,
        &server,
        |_| false,
        async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(loaded.clone(), root.clone()))
                .block_task()
                .await?;
            Ok(())
        },
    )
    .await;
    let replayed: Vec<(&str, String)> = heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::UserMessageChunk(c) => Some(("user", c)),
            SessionUpdate::AgentMessageChunk(c) => Some(("agent", c)),
            _ => None,
        })
        .filter_map(|(who, c)| match &c.content {
            ContentBlock::Text(t) => Some((who, t.text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user", "hello one".to_string()),
            ("agent", "First answer.".to_string())
        ]
    );
    assert!(heard.updates.iter().all(|n| n.session_id == first));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_reply_keeps_its_text_and_nothing_starts_after_it() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text("Here is the start").then_hang());
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let (stop, heard) = client(
        &repo,
        &server,
        |_| false,
        async |cx| {
            let session = new_session(&cx, &root).await?;
            let pending = cx.send_request(PromptRequest::new(session.clone(), text("go on")));
            // The first chunk arrives, then the editor cancels.
            while server.request_count() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            cx.send_notification(CancelNotification::new(session.clone()))?;
            pending.block_task().await.map(|r| r.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::Cancelled);
    assert!(
        heard.said().contains("Here is the start"),
        "{}",
        heard.said()
    );
    // Nothing was sent to the model after the cancel (no summary, no retry).
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.model == "gpt-4o")
            .count(),
        1
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_model_suggests_is_asked_about_and_runs_only_on_a_yes() {
    let server = MockServer::start().await;
    let reply = "Run this:\n\n```bash\necho yes > ran.txt\n```\n\nand this:\n\n```bash\necho no > not-run.txt\n```\n";
    server.push_for_model("gpt-4o", Reply::text(reply));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let accept = |asked: &Path| asked.to_string_lossy().contains("ran.txt");
    let (stop, heard) = client(&repo, &server, accept, async |cx| {
        let session = new_session(&cx, &root).await?;
        prompt(&cx, &session, "make the files").await
    })
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        heard.asked,
        [
            PathBuf::from("Run `echo yes > ran.txt` (the model suggested it)"),
            PathBuf::from("Run `echo no > not-run.txt` (the model suggested it)"),
        ]
    );
    assert_eq!(repo.read("ran.txt"), "yes\n");
    assert!(!root.join("not-run.txt").exists());
}

/// A reply that edits `.env`, which git ignores, and a.txt.
const IGNORED_EDIT: &str = ".env
```
<<<<<<< SEARCH
KEY=old
=======
KEY=new
>>>>>>> REPLACE
```

a.txt
```
<<<<<<< SEARCH
alpha
=======
ALPHA
>>>>>>> REPLACE
```
";

/// An editor accepts a hunk to a file git ignores, and then answers the second
/// question the workspace asks about such a file (git cannot bring it back), `write`.
/// Before, no such question was asked and nothing landed (the landing waited for a
/// confirmation the editor could not give). Returns what the client heard.
async fn edit_ignored(repo: &TempRepo, write: bool) -> Heard {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(IGNORED_EDIT));
    server.push_for_model("gpt-4o-mini", Reply::text("Shout alpha"));
    let root = repo.path().canonicalize().unwrap();
    let accept = move |asked: &Path| !asked.to_string_lossy().contains("git ignores") || write;
    let ((), heard) = client(repo, &server, accept, async |cx| {
        let session = new_session(&cx, &root).await?;
        prompt(&cx, &session, "/add .env a.txt").await?;
        assert_eq!(
            prompt(&cx, &session, "shout, and rotate the key").await?,
            StopReason::EndTurn
        );
        Ok(())
    })
    .await;
    let asked: Vec<String> = heard
        .asked
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[1].starts_with(
            "Write .env anyway? git ignores it: it is never committed; its content is backed up first"
        ),
        "{asked:?}"
    );
    // a.txt lands either way, in tern's commit; .env is never committed.
    only_the_hunk_of_a_landed(repo);
    heard
}

fn ignored_repo() -> TempRepo {
    let repo = repo();
    repo.write(".gitignore", ".env\n");
    repo.git(&["add", ".gitignore"]);
    repo.git(&["commit", "-q", "-m", "ignore .env"]);
    repo.write(".env", "KEY=old\n");
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_to_a_gitignored_file_lands_only_once_the_editor_says_write_it_anyway() {
    let repo = ignored_repo();
    let heard = edit_ignored(&repo, true).await;
    assert_eq!(repo.read(".env"), "KEY=new\n");
    assert!(heard.said().contains("applied 2 hunks"), "{}", heard.said());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitignored_file_the_editor_would_not_write_is_left_and_the_rest_lands() {
    let repo = ignored_repo();
    let heard = edit_ignored(&repo, false).await;
    assert_eq!(repo.read(".env"), "KEY=old\n");
    assert!(
        heard.said().contains("applied 1 hunk to a.txt"),
        "{}",
        heard.said()
    );
}

/// A hunk whose new line holds bidi overrides, isolates, a zero-width space and escape
/// sequences: the question says so in its title, its diff shows each as tern's review
/// does (a marker), a text block beside it says why, and the streamed reply carries
/// markers, never the characters; the file gets the characters once accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_with_invisible_characters_is_asked_about_with_a_caution_and_markers() {
    let hostile =
        "    return user.is_admin \u{202E}\u{2066}# admin\u{2069}\u{200B} \x1b[2J\x1b]0;PWNED\x07";
    let reply = format!(
        "auth.py\n```\n<<<<<<< SEARCH\n    return user.is_admin\n=======\n{hostile}\n>>>>>>> REPLACE\n```\n"
    );
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(&reply));
    server.push_for_model("gpt-4o-mini", Reply::text("Check admin"));
    let repo = TempRepo::with_files(&[("auth.py", "def check(user):\n    return user.is_admin\n")]);
    let root = repo.path().canonicalize().unwrap();
    let ((), heard) = client(
        &repo,
        &server,
        |_| true,
        async |cx| {
            let session = new_session(&cx, &root).await?;
            prompt(&cx, &session, "/add auth.py").await?;
            prompt(&cx, &session, "tighten the check").await?;
            Ok(())
        },
    )
    .await;
    let [question] = heard.questions.as_slice() else {
        panic!("one question: {:?}", heard.questions);
    };
    let title = question.title.clone().unwrap_or_default();
    assert!(
        title.contains("holds invisible characters (")
            && title.contains("U+202E")
            && title.contains("U+200B"),
        "{title}"
    );
    let content = question.content.clone().unwrap_or_default();
    let caution = content.iter().find_map(|c| match c {
        ToolCallContent::Content(c) => match &c.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        },
        _ => None,
    });
    assert!(
        caution.as_deref().is_some_and(|c| c.contains("⟨U+202E⟩")),
        "{content:?}"
    );
    let new_text = content
        .iter()
        .find_map(|c| match c {
            ToolCallContent::Diff(d) => Some(d.new_text.clone()),
            _ => None,
        })
        .unwrap();
    for marker in [
        "⟨U+202E⟩",
        "⟨U+2066⟩",
        "⟨U+2069⟩",
        "⟨U+200B⟩",
        "\\u{1b}[2J",
        "\\u{7}",
    ] {
        assert!(new_text.contains(marker), "{marker} in {new_text:?}");
    }
    let raw = |text: &str| text.contains(['\u{202E}', '\u{200B}', '\x1b', '\x07']);
    assert!(!raw(&new_text), "{new_text:?}");
    let said = heard.said();
    assert!(said.contains("⟨U+202E⟩") && !raw(&said), "{said:?}");
    // Accepted: the file holds the characters themselves.
    assert_eq!(
        repo.read("auth.py"),
        format!("def check(user):\n{hostile}\n")
    );
}
