//! `tern acp` driven over real pipes by the `agent-client-protocol` crate's client
//! side (code that is not tern's), the loopback server answering as the model.

use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, TextContent,
    ToolCallContent,
};
use agent_client_protocol::{ByteStreams, Client};
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

/// `tern acp` in `repo`, its stdin and stdout the client's transport.
fn agent(
    repo: &TempRepo,
    server: &MockServer,
) -> (
    tokio::process::Child,
    ByteStreams<
        tokio_util::compat::Compat<tokio::process::ChildStdin>,
        tokio_util::compat::Compat<tokio::process::ChildStdout>,
    >,
) {
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
    let stdin = child.stdin.take().unwrap().compat_write();
    let stdout = child.stdout.take().unwrap().compat();
    (child, ByteStreams::new(stdin, stdout))
}

fn text(text: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(text))]
}

/// The tool call `id` announced in `updates`: its diff's path.
fn diff_path(updates: &[SessionUpdate], id: &str) -> Option<std::path::PathBuf> {
    updates.iter().find_map(|update| match update {
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
    server.push_for_model("gpt-4o", Reply::text("Understood."));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let (mut child, transport) = agent(&repo, &server);
    let updates: Arc<Mutex<Vec<SessionUpdate>>> = Arc::default();
    let asked: Arc<Mutex<Vec<std::path::PathBuf>>> = Arc::default();
    let (seen, decided) = (updates.clone(), asked.clone());
    let (heard, answers) = (updates.clone(), asked.clone());
    let repo_root = root.clone();
    let run = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                heard.lock().unwrap().push(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let path = diff_path(&seen.lock().unwrap(), &request.tool_call.tool_call_id.0)
                    .expect("the hunk's tool call came first");
                // Accept the hunk of a.txt, reject the one of b.txt.
                let kind = match path == repo_root.join("a.txt") {
                    true => PermissionOptionKind::AllowOnce,
                    false => PermissionOptionKind::RejectOnce,
                };
                answers.lock().unwrap().push(path);
                let option = request.options.iter().find(|o| o.kind == kind).unwrap();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        option.option_id.clone(),
                    )),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.agent_capabilities.load_session);
            let session = cx
                .send_request(NewSessionRequest::new(root.clone()))
                .block_task()
                .await?
                .session_id;
            let added = cx
                .send_request(PromptRequest::new(
                    session.clone(),
                    text("/add a.txt b.txt"),
                ))
                .block_task()
                .await?;
            assert_eq!(added.stop_reason, StopReason::EndTurn);
            let edited = cx
                .send_request(PromptRequest::new(
                    session.clone(),
                    text("shout the greek letters"),
                ))
                .block_task()
                .await?;
            assert_eq!(edited.stop_reason, StopReason::EndTurn);
            let next = cx
                .send_request(PromptRequest::new(session.clone(), text("why?")))
                .block_task()
                .await?;
            assert_eq!(next.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await;
    drop(child.stdin.take());
    run.unwrap();
    // One question per hunk, a.txt's first (the reply's order).
    assert_eq!(
        *decided.lock().unwrap(),
        [root.join("a.txt"), root.join("b.txt")]
    );
    // Git holds exactly the accepted hunk, in tern's commit; b.txt is untouched.
    assert_eq!(repo.read("a.txt"), "one\nALPHA\ntwo\n");
    assert_eq!(repo.read("b.txt"), "three\nbeta\nfour\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        repo.git(&["show", "--format=", "--name-only", "HEAD"])
            .trim(),
        "a.txt"
    );
    assert_eq!(repo.git(&["show", "HEAD:a.txt"]), "one\nALPHA\ntwo\n");
    assert_eq!(repo.git(&["log", "--format=%s"]).lines().count(), 2);
    // Each hunk's diff holds its old and new lines with their context.
    let updates = updates.lock().unwrap();
    let diffs: Vec<(Option<String>, String)> = updates
        .iter()
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
    let said: String = updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(said.contains("<<<<<<< SEARCH"), "the reply streams: {said}");
    assert!(
        said.contains("applied 1 hunk to a.txt; committed"),
        "{said}"
    );
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_))),
        "the commands are advertised"
    );
    // The model hears which hunk was rejected with the next message.
    let requests = server.requests();
    let last = requests.iter().rev().find(|r| r.model == "gpt-4o").unwrap();
    let sent: String = last.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(sent.contains(tern::prompts::REJECTED_HUNKS), "{sent}");
    assert!(sent.contains("+BETA") && !sent.contains("+ALPHA"), "{sent}");
    let _ = child.wait().await;
}
