//! The three identities of every attempt, as sent and as logged, through
//! the real HTTP client: a fake service loses the answer of the first
//! create, finds the key on the status lookup, and replays. Every write
//! must carry the one key, every request its own `x-request-id`, and the
//! logs must name each apart. (Its own test binary: a thread-local log
//! subscriber is only reliable where no other test runs beside it.)

use std::io::Write;
use std::sync::{Arc, Mutex};

use tickets_client::{Client, ClientConfig, NewTicket, Settled};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TICKET: &str = r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk full","description":null,"priority":"normal","status":"open","created_at":"2026-11-30T12:00:00Z","version":1}"#;

/// One request as the fake service saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    key: Option<String>,
    request_id: Option<String>,
}

/// Reads one request's head and body; `None` when the connection ended.
async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let mut lines = head.lines();
    let mut request_line = lines.next()?.split(' ');
    let (method, path) = (
        request_line.next()?.to_owned(),
        request_line.next()?.to_owned(),
    );
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    Some(Seen {
        method,
        path,
        key: header("idempotency-key"),
        request_id: header("x-request-id"),
    })
}

fn response(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
}

/// A service that loses the first write's answer, then answers the
/// lookup (recorded) and the replay; it records every request.
async fn fake_service(listener: TcpListener, seen: Arc<Mutex<Vec<Seen>>>) {
    while let Ok((mut stream, _)) = listener.accept().await {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Some(request) = read_request(&mut stream).await {
                let writes_before = seen
                    .lock()
                    .expect("lock")
                    .iter()
                    .filter(|r| r.method == "POST")
                    .count();
                seen.lock().expect("lock").push(request.clone());
                let answer = match (request.method.as_str(), writes_before) {
                    // The first write: "committed", then the connection drops.
                    ("POST", 0) => return,
                    ("POST", _) => response("201 Created", "idempotent-replayed: true\r\n", TICKET),
                    _ => {
                        let key = request.path.rsplit('/').next().unwrap_or_default();
                        response(
                            "200 OK",
                            "",
                            &format!(
                                r#"{{"action":"create_ticket","key":"{key}","state":"succeeded","phase":"replayable","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","resource_id":null,"ticket_location":null,"fingerprint":"v1:x","created_at":"2026-11-30T12:00:00Z","replayable_until":"2026-12-30T12:00:00Z","retained_until":"2028-01-04T12:00:00Z","retry_safe":true,"next_step":"exists"}}"#
                            ),
                        )
                    }
                };
                if stream.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// A buffer the log writer appends to.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The value of `name=` in `line`.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!("{name}="))? + name.len() + 1;
    line[start..].split([' ', '}', ':']).next()
}

#[tokio::test]
async fn every_attempt_sends_and_logs_the_three_identities_apart() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    tokio::spawn(fake_service(listener, Arc::clone(&seen)));
    let client = Client::new(&base, "token", ClientConfig::default()).expect("a client");

    let settled = client
        .create_ticket(&NewTicket::new("ops", "Disk full"))
        .await
        .expect("no client error");
    let Settled::Done { key, replayed, .. } = settled else {
        panic!("found and replayed: {settled:?}");
    };
    assert!(replayed);

    let seen = seen.lock().expect("lock").clone();
    let methods: Vec<&str> = seen.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["POST", "GET", "POST"], "send, look up, fetch");
    let writes: Vec<&Seen> = seen.iter().filter(|r| r.method == "POST").collect();
    for write in &writes {
        assert_eq!(write.key.as_deref(), Some(key.as_str()), "one key");
    }
    assert_eq!(
        seen[1].path,
        format!("/v1/operations/create_ticket/{key}"),
        "the lookup names the key"
    );
    let request_ids: Vec<&str> = seen
        .iter()
        .map(|r| r.request_id.as_deref().expect("an x-request-id"))
        .collect();
    assert_eq!(
        request_ids
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3,
        "a transport request id per request: {request_ids:?}"
    );
    assert!(!request_ids.contains(&key.as_str()), "never the key");

    let text = String::from_utf8(logs.0.lock().expect("lock").clone()).expect("utf-8");
    let attempts: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("write attempt answered"))
        .collect();
    assert_eq!(attempts.len(), 2, "{text}");
    let mut attempt_ids = Vec::new();
    for (line, write) in attempts.iter().zip(&writes) {
        assert_eq!(field(line, "operation_key"), Some(key.as_str()), "{line}");
        assert_eq!(
            field(line, "transport_request_id"),
            write.request_id.as_deref(),
            "the id sent is the id logged: {line}"
        );
        let attempt = field(line, "attempt").expect("an attempt id");
        assert_ne!(Some(attempt), write.request_id.as_deref(), "{line}");
        assert_ne!(attempt, key.as_str(), "{line}");
        attempt_ids.push(attempt);
    }
    assert_ne!(attempt_ids[0], attempt_ids[1], "a fresh attempt id per try");
    let lookup = text
        .lines()
        .find(|l| l.contains("status lookup answered"))
        .expect("a lookup line");
    assert_eq!(field(lookup, "operation_key"), Some(key.as_str()));
    assert_eq!(
        field(lookup, "transport_request_id"),
        request_ids.get(1).copied()
    );
}
