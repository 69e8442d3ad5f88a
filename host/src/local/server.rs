//! The HTTP/1.1 server of `cdkd local start-api`: one listener per API on 127.0.0.1, one
//! request per connection (`Connection: close`), each matched request invoking its function
//! through a [`Runner`]. Also the small HTTP client `--container` talks to the Runtime
//! Interface Emulator with.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::api::{self, EventContext, HttpRequest, HttpResponse, LocalApi, Target};
use super::function::Code;
use super::invoke::{fingerprint, request_id, Invocation};
use super::Runner;

/// The largest request head (request line and headers) read.
const MAX_HEAD: usize = 64 * 1024;
/// The largest body read.
const MAX_BODY: usize = 10 * 1024 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A message head and body as read from a stream: the first line, headers, body.
type Message = (String, Vec<(String, String)>, Vec<u8>);

/// Why a request is refused, with the status it is answered with (400, 413, 431).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Refusal {
    status: u16,
    message: String,
}

fn refuse(status: u16, message: impl Into<String>) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        Refusal {
            status,
            message: message.into(),
        },
    )
}

fn bad(message: impl Into<String>) -> std::io::Error {
    refuse(400, message)
}

/// The status a failed read is answered with: the refusal's, else 400.
fn status_of(err: &std::io::Error) -> u16 {
    err.get_ref()
        .and_then(|inner| inner.downcast_ref::<Refusal>())
        .map_or(400, |refusal| refusal.status)
}

/// Reads one line of at most `limit` bytes (its end included) into `line`: a longer line is
/// refused with `status` before it is buffered, so one line cannot grow memory without bound.
async fn read_bounded_line<S>(
    stream: &mut BufReader<S>,
    line: &mut String,
    limit: usize,
    status: u16,
) -> std::io::Result<usize>
where
    S: tokio::io::AsyncRead + Unpin,
{
    let read = (&mut *stream).take(limit as u64).read_line(line).await?;
    if read == limit && !line.ends_with('\n') {
        return Err(refuse(status, format!("a line longer than {limit} bytes")));
    }
    Ok(read)
}

/// The answer to a request whose Host is not this machine (DNS rebinding).
const NOT_LOCAL: &str = "Forbidden: the Host header must be localhost or 127.0.0.1 (cdkd local start-api serves this machine only)";

/// Whether a `Host` header names this machine's loopback (`localhost`, `127.0.0.1`, `[::1]`,
/// with or without a port): anything else is a browser led here by another name (DNS
/// rebinding), and is refused.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "::1"
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Reads one HTTP/1.1 message (request or response) with a `Content-Length` or chunked body.
/// `on_expect` is written when the sender asks for `100-continue`.
pub(crate) async fn read_message<S>(
    stream: &mut BufReader<S>,
    on_expect: Option<&[u8]>,
) -> std::io::Result<Message>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut first = String::new();
    let mut size = read_bounded_line(stream, &mut first, MAX_HEAD, 414).await?;
    if size == 0 {
        return Err(bad("the connection closed before a request"));
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        let read =
            read_bounded_line(stream, &mut line, MAX_HEAD - size.min(MAX_HEAD) + 1, 431).await?;
        size += read;
        if size > MAX_HEAD {
            return Err(refuse(431, "the request head is too large"));
        }
        if read == 0 {
            return Err(bad("the request head is incomplete"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    if let (Some(answer), Some(expect)) = (on_expect, header(&headers, "expect")) {
        if expect.eq_ignore_ascii_case("100-continue") {
            // Only a request this server would answer is invited to send its body.
            if !header(&headers, "host").is_some_and(is_local_host) {
                return Err(refuse(403, NOT_LOCAL));
            }
            stream.get_mut().write_all(answer).await?;
        }
    }
    let mut body = Vec::new();
    if header(&headers, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut line = String::new();
            if read_bounded_line(stream, &mut line, 1024, 400).await? == 0 {
                return Err(bad("the body ended inside a chunk"));
            }
            let length = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|_| bad("a malformed chunk size"))?;
            if length == 0 {
                // Trailers, up to the empty line.
                loop {
                    let mut trailer = String::new();
                    if read_bounded_line(stream, &mut trailer, MAX_HEAD, 431).await? == 0
                        || trailer.trim().is_empty()
                    {
                        break;
                    }
                }
                break;
            }
            if length > MAX_BODY - body.len() {
                return Err(refuse(413, "the body is too large"));
            }
            let start = body.len();
            body.resize(start + length, 0);
            stream.read_exact(&mut body[start..]).await?;
            let mut crlf = [0u8; 2];
            stream.read_exact(&mut crlf).await?;
        }
    } else if let Some(length) = header(&headers, "content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| bad("a malformed Content-Length"))?;
        if length > MAX_BODY {
            return Err(refuse(413, "the body is too large"));
        }
        body.resize(length, 0);
        stream.read_exact(&mut body).await?;
    }
    Ok((first.trim_end().to_string(), headers, body))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// The bytes of a response, with `Content-Length` and `Connection: close`.
pub fn render(response: &HttpResponse) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        out.push_str(&format!("{name}: {}\r\n", value.replace(['\r', '\n'], " ")));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        response.body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&response.body);
    bytes
}

/// POSTs `body` to `http://{address}{path}` and returns the status, headers and body.
pub async fn post(
    address: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<(String, String)>, Vec<u8>)> {
    let stream = TcpStream::connect(address).await?;
    let mut stream = BufReader::new(stream);
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.get_mut().write_all(head.as_bytes()).await?;
    stream.get_mut().write_all(body).await?;
    let (status_line, headers, mut body) = read_message(&mut stream, None).await?;
    if header(&headers, "content-length").is_none()
        && header(&headers, "transfer-encoding").is_none()
    {
        stream.read_to_end(&mut body).await?;
    }
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("a malformed status line: {status_line}")))?;
    Ok((status, headers, body))
}

/// What the server shares between connections.
pub struct Served {
    /// The functions by logical id.
    pub runners: BTreeMap<String, Arc<Runner>>,
    /// The account the events name.
    pub account: String,
    /// The last fingerprint of each function's code and layer folders, to report reloads.
    pub fingerprints: Mutex<BTreeMap<String, u64>>,
}

impl Served {
    /// Notes (and reports) when a function's code or layer folders changed since its last run:
    /// each run loads them afresh, so the change is live from this request on.
    fn note_reload(&self, runner: &Runner) {
        let function = runner.function();
        let Code::Folder(folder) = &function.code else {
            return;
        };
        let mut print = std::iter::once(folder)
            .chain(&function.layers)
            .map(|f| fingerprint(f))
            .fold(0u64, |acc, f| acc.rotate_left(7) ^ f);
        print = print.max(1);
        let mut known = self.fingerprints.lock().unwrap_or_else(|e| e.into_inner());
        let changed = known
            .insert(function.logical_id.clone(), print)
            .is_some_and(|old| old != print);
        if changed {
            eprintln!(
                "Reloaded {}: its code changed in {}",
                function.path,
                folder.display()
            );
        }
    }

    /// Answers one request for one API.
    pub async fn answer(&self, api: &LocalApi, request: HttpRequest, host: String) -> HttpResponse {
        let path = request.target.split('?').next().unwrap_or("/").to_string();
        let Some(matched) = api.route(&request.method, &path) else {
            eprintln!(
                "{} {} -> no route in {}",
                request.method, request.target, api.path
            );
            return api.not_found();
        };
        let (function, payload) = match &matched.route.target {
            Target::Lambda { function, payload } => (function.clone(), *payload),
            Target::Unsupported(what) => {
                eprintln!(
                    "{} {} -> {} {} is {what}, which cdkd local does not serve",
                    request.method, request.target, matched.route.method, matched.route.path
                );
                return HttpResponse::message(
                    502,
                    &format!(
                        "cdkd local serves Lambda proxy integrations only; {} {} is {what}",
                        matched.route.method, matched.route.path
                    ),
                );
            }
        };
        let Some(runner) = self.runners.get(&function) else {
            return HttpResponse::message(502, &format!("function {function} cannot run here"));
        };
        self.note_reload(runner);
        let request_id = request_id();
        let context = EventContext {
            api,
            account: &self.account,
            request_id: &request_id,
            epoch_ms: chrono::Utc::now().timestamp_millis(),
            host,
        };
        let event = api::event(&request, &matched, &context);
        let outcome = runner.invoke(&event, "").await;
        let response = match outcome {
            Ok(Invocation {
                error: false,
                payload: text,
                ..
            }) => {
                let result: serde_json::Value =
                    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
                match api::response(&result, payload) {
                    Some(response) => response,
                    None => {
                        eprintln!(
                            "{}: malformed Lambda proxy response (it needs a statusCode, and a string body): {text}",
                            runner.function().label()
                        );
                        api.integration_failed()
                    }
                }
            }
            Ok(failed) => {
                eprintln!("{} failed: {}", runner.function().label(), failed.payload);
                api.integration_failed()
            }
            Err(err) => {
                eprintln!("{err}");
                api.integration_failed()
            }
        };
        eprintln!(
            "{} {} -> {} ({})",
            request.method,
            request.target,
            runner.function().path,
            response.status
        );
        response
    }
}

async fn connection(served: Arc<Served>, api: Arc<LocalApi>, stream: TcpStream) {
    let source_ip = stream
        .peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let mut stream = BufReader::new(stream);
    let read = tokio::time::timeout(
        READ_TIMEOUT,
        read_message(&mut stream, Some(b"HTTP/1.1 100 Continue\r\n\r\n")),
    )
    .await;
    let response = match read {
        Ok(Ok((line, headers, body))) => {
            let mut parts = line.split_whitespace();
            match (parts.next(), parts.next()) {
                (Some(_), Some(_)) if !header(&headers, "host").is_some_and(is_local_host) => {
                    HttpResponse::message(403, NOT_LOCAL)
                }
                (Some(method), Some(target)) => {
                    let host = header(&headers, "host").unwrap_or("127.0.0.1").to_string();
                    let request = HttpRequest {
                        method: method.to_string(),
                        target: target.to_string(),
                        headers,
                        body,
                        source_ip,
                    };
                    served.answer(&api, request, host).await
                }
                _ => HttpResponse::message(400, "Bad Request"),
            }
        }
        Ok(Err(err)) => HttpResponse::message(status_of(&err), &err.to_string()),
        Err(_) => HttpResponse::message(408, "Request Timeout"),
    };
    let refused = response.status >= 400 && response.status != 404;
    let stream = stream.get_mut();
    let _ = stream.write_all(&render(&response)).await;
    let _ = stream.shutdown().await;
    if refused {
        // A lingering close: what the client still sends is read and dropped for a moment, so
        // closing with unread input does not reset the connection before it reads the answer.
        let mut sink = [0u8; 16 * 1024];
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let mut drained = 0;
            while drained < MAX_HEAD * 16 {
                match stream.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => drained += read,
                }
            }
        })
        .await;
    }
}

/// Serves each API on its listener until `stop` resolves.
pub async fn serve(
    served: Arc<Served>,
    apis: Vec<(LocalApi, TcpListener)>,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut tasks = Vec::new();
    for (api, listener) in apis {
        let served = served.clone();
        let api = Arc::new(api);
        tasks.push(tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(connection(served.clone(), api.clone(), stream));
                    }
                    Err(err) => {
                        tracing::warn!("accepting a connection for {} failed: {err}", api.path);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        }));
    }
    stop.await;
    for task in tasks {
        task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_foreign_host_is_not_invited_to_send_its_body() {
        let (mut client, server) = tokio::io::duplex(4096);
        client
            .write_all(b"POST / HTTP/1.1\r\nHost: attacker.example\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            .await
            .unwrap();
        let mut server = BufReader::new(server);
        let err = read_message(&mut server, Some(b"HTTP/1.1 100 Continue\r\n\r\n"))
            .await
            .unwrap_err();
        assert_eq!(status_of(&err), 403);
        drop(server);
        let mut answered = Vec::new();
        client.read_to_end(&mut answered).await.unwrap();
        assert!(
            answered.is_empty(),
            "{}",
            String::from_utf8_lossy(&answered)
        );
    }

    #[tokio::test]
    async fn requests_are_read_with_length_chunked_and_expect() {
        let (client, server) = tokio::io::duplex(4096);
        let mut client = client;
        client
            .write_all(b"POST /a?b=1 HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            .await
            .unwrap();
        let mut server = BufReader::new(server);
        let (line, headers, body) =
            read_message(&mut server, Some(b"HTTP/1.1 100 Continue\r\n\r\n"))
                .await
                .unwrap();
        assert_eq!(line, "POST /a?b=1 HTTP/1.1");
        assert_eq!(header(&headers, "host"), Some("localhost"));
        assert_eq!(body, b"abcde");
        let mut continued = [0u8; 25];
        client.read_exact(&mut continued).await.unwrap();
        assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");

        let (mut client, server) = tokio::io::duplex(4096);
        client
            .write_all(b"PUT / HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody")
            .await
            .unwrap();
        let (_, _, body) = read_message(&mut BufReader::new(server), None)
            .await
            .unwrap();
        assert_eq!(body, b"body");
    }

    #[test]
    fn only_loopback_names_are_local_hosts() {
        for local in [
            "localhost",
            "LOCALHOST:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(is_local_host(local), "{local}");
        }
        for other in [
            "attacker.example",
            "localhost.attacker.example",
            "127.0.0.2",
            "10.0.0.1:80",
            "[::2]:80",
            "",
        ] {
            assert!(!is_local_host(other), "{other}");
        }
    }

    #[test]
    fn responses_carry_their_length_and_close() {
        let text = String::from_utf8(render(&HttpResponse {
            status: 201,
            headers: vec![
                ("x-a".into(), "1".into()),
                ("Content-Length".into(), "99".into()),
            ],
            body: b"hi".to_vec(),
        }))
        .unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 201 Created\r\nx-a: 1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi"
        );
    }
}
