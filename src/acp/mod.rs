//! `tern acp`: tern as an Agent Client Protocol agent, the third front end on the
//! engine's protocol (after the TUI and the headless one). It speaks JSON-RPC over
//! stdin and stdout through the `agent-client-protocol` crate, which this module and
//! its submodules alone use: nothing but JSON-RPC goes to stdout, logs go to tern's
//! log. Each ACP session is an engine of its own; a prompt is an op, its events become
//! `session/update` notifications, and each proposed hunk is a tool call the user
//! accepts or rejects through `session/request_permission` before the engine lands
//! the accepted ones (see the README, *tern in an editor*).

mod buffers;
mod prompt;
mod review;
mod session;
mod updates;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest,
};
use agent_client_protocol::{Agent, ByteStreams, Error};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::cli::GlobalArgs;

/// What the connection shares between its handlers: the flags, what the client said
/// it can do, and the open sessions by id.
struct Shared {
    global: GlobalArgs,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, session::Session>>,
}

impl Shared {
    fn session(&self, id: &str) -> Result<session::Session, Error> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| Error::invalid_params().data(format!("no open session {id}")))
    }
}

/// A lock that a panic elsewhere did not poison for good: the data is plain.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves one client on stdin and stdout until it closes them; then every session's
/// engine is shut down (saving its session) before tern exits.
pub async fn run(global: GlobalArgs) -> anyhow::Result<ExitCode> {
    let shared = Arc::new(Shared {
        global,
        client: Mutex::new(ClientCapabilities::new()),
        sessions: Mutex::new(HashMap::new()),
    });
    let (on_init, on_new, on_load, on_prompt, on_cancel) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    let transport = ByteStreams::new(
        ToClient(tokio::io::stdout()).compat_write(),
        tokio::io::stdin().compat(),
    );
    let served = Agent
        .v1()
        .name("tern")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                *lock(&on_init.client) = request.client_capabilities;
                responder.respond(initialized())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let shared = on_new.clone();
                tokio::spawn(async move {
                    let opened = session::open(&shared, cx, request.cwd, None).await;
                    let _ = match opened {
                        Ok(id) => responder.respond(NewSessionResponse::new(id)),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let shared = on_load.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    let opened = session::open(&shared, cx, request.cwd, Some(id)).await;
                    let _ = match opened {
                        Ok(_) => responder.respond(LoadSessionResponse::new()),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| match on_prompt
                .session(&request.session_id.0)
            {
                Ok(session) => session.prompt(request.prompt, responder),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, _cx| {
                if let Ok(session) = on_cancel.session(&cancel.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    let sessions: Vec<session::Session> = lock(&shared.sessions).drain().map(|(_, s)| s).collect();
    for session in sessions {
        session.shut_down().await;
    }
    served.map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// stdout, to a client that may have gone: once it has closed its end (a broken pipe),
/// what tern still says is dropped, and the connection ends when stdin does, as a
/// client leaving ends it (not as a failure).
struct ToClient(tokio::io::Stdout);

/// `result`, a broken pipe taken as `gone` (all written).
fn unless_gone<T>(result: std::io::Result<T>, gone: T) -> std::io::Result<T> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(gone),
        other => other,
    }
}

impl tokio::io::AsyncWrite for ToClient {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0)
            .poll_write(cx, buf)
            .map(|r| unless_gone(r, buf.len()))
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0)
            .poll_flush(cx)
            .map(|r| unless_gone(r, ()))
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0)
            .poll_shutdown(cx)
            .map(|r| unless_gone(r, ()))
    }
}

/// What tern tells the client it can do: load its own sessions, take files embedded
/// in a prompt (and links to them, which every agent takes).
fn initialized() -> InitializeResponse {
    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .agent_info(Implementation::new("tern", env!("CARGO_PKG_VERSION")))
}
