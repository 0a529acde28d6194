//! `tern acp` with an editor's files: a client (the `agent-client-protocol` crate's)
//! that reads its buffers to tern through `fs/read_text_file`, one of them holding
//! unsaved changes, and prompts that attach files (outside the repository, huge,
//! binary, not UTF-8, CRLF). Nothing lands over an unsaved buffer, nothing outside
//! the repository is read into the chat or written, and tern never writes through the
//! editor.

use agent_client_protocol::v1::schema::{
    BlobResourceContents, ContentBlock, EmbeddedResource, EmbeddedResourceResource, PromptRequest,
    ResourceLink, SessionUpdate, StopReason, TextContent, TextResourceContents, ToolCallStatus,
};

use crate::acp::{Editor, TWO_FILE_EDIT, client_of, new_session_in_editor, prompt, repo};
use crate::support::{MockServer, Reply, TempRepo};

/// The statuses the tool calls of hunks of `file` went through, in order.
fn statuses(heard: &crate::acp::Heard, file: &str) -> Vec<ToolCallStatus> {
    let calls: Vec<String> = heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::ToolCall(call) if call.title.contains(file) => {
                Some(call.tool_call_id.0.to_string())
            }
            _ => None,
        })
        .collect();
    heard
        .updates()
        .filter_map(|u| match u {
            SessionUpdate::ToolCallUpdate(update)
                if calls.contains(&update.tool_call_id.0.to_string()) =>
            {
                update.fields.status
            }
            _ => None,
        })
        .collect()
}

/// A file already in the chat that the editor holds with unsaved changes: the model
/// would read the file on disk, and its edits would be made against text the user no
/// longer has. The prompt stops before anything is sent, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_buffer_of_a_chat_file_stops_the_prompt_before_the_model() {
    let server = MockServer::start().await;
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let editor = Editor::default();
    let typing = editor.clone();
    let ((), heard) = client_of(
        &repo,
        &server,
        editor,
        |_| true,
        async |cx| {
            let session = new_session_in_editor(&cx, &root).await?;
            assert_eq!(
                prompt(&cx, &session, "/add a.txt").await?,
                StopReason::EndTurn
            );
            typing.type_in(root.join("a.txt"), "one\nalpha, typed and not saved\ntwo\n");
            assert_eq!(
                prompt(&cx, &session, "shout the greek letters").await?,
                StopReason::EndTurn
            );
            Ok(())
        },
    )
    .await;
    let said = heard.said();
    assert!(
        said.contains("unsaved changes in the editor: a.txt"),
        "{said}"
    );
    assert!(
        server.requests().iter().all(|r| r.model != "gpt-4o"),
        "nothing went to the model: {:#?}",
        server.requests()
    );
    assert!(heard.read.contains(&root.join("a.txt")), "{:?}", heard.read);
    assert_eq!(repo.read("a.txt"), "one\nalpha\ntwo\n");
}

/// The user accepts both hunks, but typed in a.txt while they were asked (the editor
/// holds it unsaved): a.txt's hunk does not land over their changes, its tool call
/// fails, they are told why, and so is the model (it was not a rejection); b.txt's
/// hunk lands. tern writes the file itself, never through the editor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_on_a_file_typed_in_during_review_does_not_land_and_the_model_hears_why() {
    let server = MockServer::start().await;
    server.push_for_model("gpt-4o", Reply::text(TWO_FILE_EDIT));
    server.push_for_model("gpt-4o-mini", Reply::text("Shout beta"));
    server.push_for_model("gpt-4o", Reply::text("Understood."));
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let editor = Editor::default();
    let typing = editor.clone();
    let a = root.join("a.txt");
    let accept = move |asked: &std::path::Path| {
        if asked == a {
            typing.type_in(a.clone(), "one\nalpha\ntwo\nmore, not saved\n");
        }
        true
    };
    let ((), heard) = client_of(&repo, &server, editor, accept, async |cx| {
        let session = new_session_in_editor(&cx, &root).await?;
        prompt(&cx, &session, "/add a.txt b.txt").await?;
        assert_eq!(
            prompt(&cx, &session, "shout the greek letters").await?,
            StopReason::EndTurn
        );
        // The user saves, and asks again (the buffer is the file now).
        std::fs::write(root.join("a.txt"), "one\nalpha\ntwo\nmore, not saved\n").unwrap();
        assert_eq!(prompt(&cx, &session, "why?").await?, StopReason::EndTurn);
        Ok(())
    })
    .await;
    assert_eq!(repo.read("b.txt"), "three\nBETA\nfour\n");
    assert_eq!(repo.read("a.txt"), "one\nalpha\ntwo\nmore, not saved\n");
    assert_eq!(
        repo.git(&["show", "--format=", "--name-only", "HEAD"])
            .trim(),
        "b.txt"
    );
    let said = heard.said();
    assert!(
        said.contains("not applied to a.txt: the editor has unsaved changes there"),
        "{said}"
    );
    assert!(said.contains("applied 1 hunk to b.txt"), "{said}");
    assert_eq!(statuses(&heard, "a.txt"), [ToolCallStatus::Failed]);
    assert_eq!(statuses(&heard, "b.txt"), [ToolCallStatus::Completed]);
    let requests = server.requests();
    let last = requests.iter().rev().find(|r| r.model == "gpt-4o").unwrap();
    let sent: String = last.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(sent.contains(tern::prompts::UNSAVED_IN_EDITOR), "{sent}");
    assert!(heard.written.is_empty(), "{:?}", heard.written);
}

/// Sends `blocks` as the one prompt of a session in `repo`, from `editor`, every hunk
/// accepted: how the prompt ended, and what the client heard.
async fn prompt_once(
    repo: &TempRepo,
    server: &MockServer,
    editor: Editor,
    blocks: Vec<ContentBlock>,
) -> (
    Result<StopReason, agent_client_protocol::Error>,
    crate::acp::Heard,
) {
    let root = repo.path().canonicalize().unwrap();
    client_of(
        repo,
        server,
        editor,
        |_| true,
        async |cx| {
            let session = new_session_in_editor(&cx, &root).await?;
            let answer = cx.send_request(PromptRequest::new(session, blocks));
            Ok(answer.block_task().await.map(|r| r.stop_reason))
        },
    )
    .await
}

fn link(path: &std::path::Path) -> ContentBlock {
    let uri = url::Url::from_file_path(path).unwrap();
    ContentBlock::ResourceLink(ResourceLink::new("file", uri.as_str()))
}

fn embedded(path: &std::path::Path, text: &str) -> ContentBlock {
    let uri = url::Url::from_file_path(path).unwrap();
    ContentBlock::Resource(EmbeddedResource::new(
        EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
            text,
            uri.as_str(),
        )),
    ))
}

/// A prompt that attaches, beside its text: a file outside the repository (linked and
/// embedded), a binary one (linked, and as an embedded blob), one that is not UTF-8
/// and one with CRLF endings, the last two open in the editor as it decodes them (no
/// unsaved change in either; a prompt that attached any file used to wait for ever).
/// The outside file and the binary are said to be left out, and the outside file is
/// never sent to the model and never written, though the reply edits it and the user
/// accepts everything; the other two are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_outside_binary_and_not_utf8_are_each_taken_or_left_out_and_said() {
    let server = MockServer::start().await;
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = outside_dir
        .path()
        .canonicalize()
        .unwrap()
        .join("outside.txt");
    std::fs::write(&outside, "secret outside\n").unwrap();
    let reply = format!(
        "{}\n```\n<<<<<<< SEARCH\nsecret outside\n=======\nchanged by the model\n>>>>>>> REPLACE\n```\n",
        outside.display()
    );
    server.push_for_model("gpt-4o", Reply::text(reply));
    // What it says when told its edit failed.
    server.push_for_model(
        "gpt-4o",
        Reply::text("I see: it is outside the repository."),
    );
    let repo = TempRepo::with_files(&[("crlf.txt", "one\r\ntwo\r\n")]);
    repo.write("logo.bin", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    repo.write("latin1.txt", b"caf\xE9 au lait\n");
    let root = repo.path().canonicalize().unwrap();
    let editor = Editor::default();
    editor.type_in(root.join("latin1.txt"), "café au lait\n");
    editor.type_in(root.join("crlf.txt"), "one\ntwo\n");
    let blob = url::Url::from_file_path(root.join("logo.bin")).unwrap();
    let blocks = vec![
        ContentBlock::Text(TextContent::new("what do these say?")),
        link(&outside),
        embedded(&outside, "secret outside\n"),
        link(&root.join("logo.bin")),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::BlobResourceContents(BlobResourceContents::new(
                "iVBORw0KGgo=",
                blob.as_str(),
            )),
        )),
        link(&root.join("latin1.txt")),
        link(&root.join("crlf.txt")),
    ];
    let (stop, heard) = prompt_once(&repo, &server, editor, blocks).await;
    let stop = stop.unwrap();
    let said = heard.said();
    eprintln!("{said}");
    assert_eq!(stop, StopReason::EndTurn, "{said}");
    assert!(!said.contains("unsaved changes"), "{said}");
    let outside_uri = url::Url::from_file_path(&outside).unwrap();
    assert!(
        said.contains(&format!(
            "{outside_uri} (not a file inside the repository, where tern reads and writes)"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("{blob} (binary content)")), "{said}");
    assert!(said.contains("logo.bin looks like a binary file"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "secret outside\n"
    );
    assert!(
        said.contains(&format!(
            "tern: not applied: block 1 ({}): refused: {} is outside the repository",
            outside.display(),
            outside.display()
        )),
        "{said}"
    );
    // tern's own lines never run on after the reply's last words.
    assert!(
        said.contains("I see: it is outside the repository.\ntern: "),
        "{said}"
    );
    // The first request (the next holds the model's own edit, which failed).
    let requests = server.requests();
    let first = requests.iter().find(|r| r.model == "gpt-4o").unwrap();
    let sent: String = first.messages.iter().map(|m| m.text.as_str()).collect();
    assert!(!sent.contains("secret outside"), "{sent}");
    assert!(
        sent.contains("caf\u{FFFD} au lait") && sent.contains("crlf.txt"),
        "{sent}"
    );
    assert!(heard.written.is_empty(), "{:?}", heard.written);
}

/// A huge file attached: the request it would make is refused before anything is
/// sent, with what is big in it and how to drop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_attachment_is_refused_before_anything_is_sent_saying_how_to_drop_it() {
    let server = MockServer::start().await;
    let big = "a line of a huge generated file\n".repeat(200_000);
    let repo = TempRepo::with_files(&[("big.txt", big.as_str())]);
    let root = repo.path().canonicalize().unwrap();
    let blocks = vec![
        ContentBlock::Text(TextContent::new("what does it say?")),
        link(&root.join("big.txt")),
    ];
    let (refused, _) = prompt_once(&repo, &server, Editor::default(), blocks).await;
    let why = refused
        .unwrap_err()
        .data
        .map(|d| d.to_string())
        .unwrap_or_default();
    assert!(
        why.contains("big.txt") && why.contains("/drop big.txt"),
        "{why}"
    );
    assert!(server.requests().iter().all(|r| r.model != "gpt-4o"));
}
