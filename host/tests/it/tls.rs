//! TLS and mutual TLS through the gateway's own listener (issue 16): a test PKI made with rcgen
//! (root, intermediate, server, client certificates valid / expired / not yet valid / revoked /
//! from a foreign CA / without the clientAuth usage), each handshake outcome, `required` vs
//! `optional`, certificate identities (SAN URI, SAN DNS, key pin; unmapped and mismatched → 403),
//! rotation of the server certificate and the CRL under load, handshake abuse, and outbound
//! mutual TLS to an upstream that requires a client certificate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use sovereign::demo::pki::{Authority, Issued, Leaf, Usage, Validity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Stack, scratch_dir};

/// The test PKI: files written under `dir`.
struct Pki {
    dir: PathBuf,
    root: Authority,
    inter: Authority,
    /// Serials the intermediate's CRL revokes.
    revoked: Vec<u64>,
}

impl Pki {
    fn new() -> Pki {
        let dir = scratch_dir();
        let mut root = Authority::root("Test root").unwrap();
        let inter = root.intermediate("Test issuing CA").unwrap();
        let mut pki = Pki {
            dir,
            root,
            inter,
            revoked: Vec::new(),
        };
        pki.write("ca.pem", &pki.root.cert_pem());
        let server = pki
            .root
            .issue(&Leaf::server(
                "localhost",
                &["localhost"],
                &[std::net::Ipv4Addr::LOCALHOST.into()],
            ))
            .unwrap();
        pki.save("server", &server);
        pki.write_crls();
        pki
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn write(&self, name: &str, text: &str) {
        // Whole files appear at once (rename), as an operator's deploy tool would do.
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.path(name)).unwrap();
    }

    fn save(&self, name: &str, issued: &Issued) {
        self.write(&format!("{name}.key"), &issued.key_pem);
        self.write(&format!("{name}.pem"), &issued.chain_pem);
    }

    /// A client certificate from the intermediate (the chain carries the intermediate).
    fn client(&mut self, name: &str, tweak: impl FnOnce(&mut Leaf)) -> Issued {
        let mut leaf = Leaf::client(name);
        tweak(&mut leaf);
        let issued = self.inter.issue(&leaf).unwrap();
        self.save(name, &issued);
        issued
    }

    fn write_crls(&mut self) {
        let root_crl = self.root.crl(&[]).unwrap();
        let inter_crl = self.inter.crl(&self.revoked).unwrap();
        self.write("crl.pem", &format!("{root_crl}{inter_crl}"));
    }

    fn revoke(&mut self, issued: &Issued) {
        self.revoked.push(issued.serial);
        self.write_crls();
    }

    /// The `[tls]` section (files of this PKI) and cert identities for `demo`/`other` teams.
    fn config(&self, client_auth: &str, extra: &str) -> String {
        let p = |f: &str| format!("{:?}", self.path(f).display().to_string());
        format!(
            "[tls]\ncert = {}\nkey = {}\nclient_auth = \"{client_auth}\"\nclient_ca = [{}]\ncrls = [{}]\n\
             handshake_timeout_ms = 500\nreload_poll_ms = 50\n\n\
             [[teams]]\nid = \"other\"\nname = \"Other\"\n\n\
             [[cert_identities]]\nname = \"svc-risk\"\nteam = \"demo\"\nrole = \"member\"\nuri = \"spiffe://corp.example/team/risk\"\n\n\
             [[cert_identities]]\nname = \"svc-other\"\nteam = \"other\"\nrole = \"member\"\nuri = \"spiffe://corp.example/team/other\"\n\n\
             [[cert_identities]]\nname = \"svc-dns\"\nteam = \"demo\"\nrole = \"member\"\ndns = \"batch.corp.example\"\n\n\
             [[cert_identities]]\nname = \"svc-auditor\"\nteam = \"demo\"\nrole = \"auditor\"\nuri = \"spiffe://corp.example/team/audit\"\n\n{extra}",
            p("server.pem"),
            p("server.key"),
            p("ca.pem"),
            p("crl.pem"),
        )
    }
}

fn uri(leaf: &mut Leaf, u: &str) {
    leaf.uris.push(u.into());
}

/// A rustls client trusting `ca` only, presenting `identity` (chain, key) when given.
fn client_tls(ca: &Path, identity: Option<(&Path, &Path)>) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(key).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
        None => b.with_no_client_auth(),
    }
}

fn https(pki: &Pki, identity: Option<&str>) -> reqwest::Client {
    let cert;
    let key;
    let id = match identity {
        Some(name) => {
            cert = pki.path(&format!("{name}.pem"));
            key = pki.path(&format!("{name}.key"));
            Some((cert.as_path(), key.as_path()))
        }
        None => None,
    };
    reqwest::Client::builder()
        .tls_backend_preconfigured(client_tls(&pki.path("ca.pem"), id))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn port(stack: &Stack) -> u16 {
    stack.gateway.rsplit(':').next().unwrap().parse().unwrap()
}

fn base(stack: &Stack) -> String {
    format!("https://localhost:{}", port(stack))
}

fn chat_body() -> Value {
    json!({"model": "llama-3.2-3b-instruct", "messages": [{"role": "user", "content": "hello"}]})
}

/// Status and error code of a chat request; `Err` when the connection or handshake failed.
async fn chat(
    client: &reqwest::Client,
    stack: &Stack,
    key: Option<&str>,
) -> Result<(u16, Value), String> {
    let mut req = client
        .post(format!("{}/v1/chat/completions", base(stack)))
        .json(&chat_body());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.map_err(|e| format!("{e:?}"))?;
    let status = res.status().as_u16();
    Ok((status, res.json().await.unwrap_or(Value::Null)))
}

async fn start(pki: &Pki, client_auth: &str, extra: &str) -> Stack {
    let tls = pki.config(client_auth, extra);
    Stack::start(move |t| format!("{t}\n{tls}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_client_auth_maps_certificates_to_identities() {
    let mut pki = Pki::new();
    pki.client("risk", |l| uri(l, "spiffe://corp.example/team/risk"));
    pki.client("other", |l| uri(l, "spiffe://corp.example/team/other"));
    pki.client("audit", |l| uri(l, "spiffe://corp.example/team/audit"));
    pki.client("batch", |l| l.dns.push("Batch.Corp.Example".into()));
    pki.client("unmapped", |l| uri(l, "spiffe://corp.example/team/nobody"));
    pki.client("pinned", |l| uri(l, "spiffe://corp.example/team/nobody"));
    let pin = sovereign::tls::PeerCert::from_pem(
        &std::fs::read_to_string(pki.path("pinned.pem")).unwrap(),
    )
    .unwrap()
    .spki_sha256;
    let stack = start(
        &pki,
        "optional",
        &format!(
            "[[cert_identities]]\nname = \"svc-pinned\"\nteam = \"other\"\nrole = \"member\"\nspki_sha256 = \"{pin}\"\n"
        ),
    )
    .await;
    let key = stack.member_key.clone();

    // No certificate: the bearer key, as over plain HTTP; neither → 401.
    let anon = https(&pki, None);
    assert_eq!(chat(&anon, &stack, Some(&key)).await.unwrap().0, 200);
    assert_eq!(chat(&anon, &stack, None).await.unwrap().0, 401);

    // A mapped certificate alone is enough: by SAN URI (through an intermediate), by DNS name
    // (case-insensitive), by key pin. A placeholder bearer beside it is ignored.
    for name in ["risk", "batch", "pinned"] {
        let c = https(&pki, Some(name));
        let (status, body) = chat(&c, &stack, None).await.unwrap();
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(chat(&c, &stack, Some("placeholder")).await.unwrap().0, 200);
    }

    // Roles are the identity's: the auditor certificate may not chat.
    let (status, body) = chat(&https(&pki, Some("audit")), &stack, None)
        .await
        .unwrap();
    assert_eq!(status, 403, "{body}");

    // Verified but mapped to nothing: 403 naming the fix, even with a valid key.
    let unmapped = https(&pki, Some("unmapped"));
    for k in [None, Some(key.as_str())] {
        let (status, body) = chat(&unmapped, &stack, k).await.unwrap();
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"]["code"], "certificate_not_mapped", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("/v1/admin/cert-identities")
        );
    }

    // A key of team demo with a certificate of team other: 403; with one of team demo: the key.
    let (status, body) = chat(&https(&pki, Some("other")), &stack, Some(&key))
        .await
        .unwrap();
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "identity_mismatch");
    assert_eq!(
        chat(&https(&pki, Some("risk")), &stack, Some(&key))
            .await
            .unwrap()
            .0,
        200
    );

    // The journal says how each caller authenticated.
    let entries = journal_entries(&stack).await;
    let mtls: Vec<&Value> = entries.iter().filter(|e| e["auth"] == "mtls").collect();
    let keyed: Vec<&Value> = entries.iter().filter(|e| e["auth"] == "key").collect();
    assert!(mtls.len() >= 7, "{entries:?}");
    assert!(mtls.iter().all(|e| {
        e["key_id"].as_str().unwrap().starts_with("cid_")
            && e["cert_sha256"].as_str().unwrap().starts_with("sha256:")
    }));
    assert!(keyed.iter().any(|e| e.get("cert_sha256").is_none()));
    assert!(keyed.iter().any(|e| e.get("cert_sha256").is_some()));
}

/// Every entry of the stack's journal so far.
async fn journal_entries(stack: &Stack) -> Vec<Value> {
    if let Some(j) = &stack.journal {
        j.flush().await.unwrap();
    }
    let mut out = Vec::new();
    for f in std::fs::read_dir(&stack.journal_dir).unwrap() {
        let f = f.unwrap().path();
        if f.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("journal-")
        {
            for line in std::fs::read_to_string(&f).unwrap().lines() {
                out.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_that_does_not_verify_is_refused_in_the_handshake() {
    let mut pki = Pki::new();
    let good = |l: &mut Leaf| uri(l, "spiffe://corp.example/team/risk");
    pki.client("valid", good);
    pki.client("expired", |l| {
        good(l);
        l.validity = Validity::Expired;
    });
    pki.client("future", |l| {
        good(l);
        l.validity = Validity::NotYetValid;
    });
    pki.client("server-usage", |l| {
        good(l);
        l.usage = Usage::ServerOnlyAsClient;
    });
    let revoked = pki.client("revoked", good);
    pki.revoke(&revoked);
    // A certificate from a CA the gateway does not trust, with the same SAN.
    let mut foreign = Authority::root("Foreign root").unwrap();
    let mut leaf = Leaf::client("foreign");
    good(&mut leaf);
    pki.save("foreign", &foreign.issue(&leaf).unwrap());

    for mode in ["optional", "required"] {
        let stack = start(&pki, mode, "").await;
        assert_eq!(
            chat(&https(&pki, Some("valid")), &stack, None)
                .await
                .unwrap()
                .0,
            200,
            "{mode}"
        );
        for bad in ["expired", "future", "server-usage", "revoked", "foreign"] {
            let r = chat(&https(&pki, Some(bad)), &stack, Some(&stack.member_key)).await;
            assert!(r.is_err(), "{mode}/{bad}: {r:?}");
        }
        // Without a certificate: a key works in `optional`; in `required` nothing does.
        let r = chat(&https(&pki, None), &stack, Some(&stack.member_key)).await;
        match mode {
            "optional" => assert_eq!(r.unwrap().0, 200),
            _ => assert!(r.is_err(), "required: {r:?}"),
        }
        // Still serving.
        assert_eq!(
            chat(&https(&pki, Some("valid")), &stack, None)
                .await
                .unwrap()
                .0,
            200
        );
        let m = metric(
            &https(&pki, Some("valid")),
            &stack,
            "sovereign_tls_handshake_failures_total",
        )
        .await;
        assert!(m >= 5.0, "{mode}: {m}");
    }
}

async fn metric(client: &reqwest::Client, stack: &Stack, name: &str) -> f64 {
    let text = client
        .get(format!("{}/metrics", base(stack)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing"))
        .parse()
        .unwrap()
}

/// The server certificate a fresh handshake presents.
async fn served_certificate(pki: &Pki, stack: &Stack, identity: &str) -> Result<Vec<u8>, String> {
    let config = client_tls(
        &pki.path("ca.pem"),
        Some((
            &pki.path(&format!("{identity}.pem")),
            &pki.path(&format!("{identity}.key")),
        )),
    );
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(("127.0.0.1", port(stack)))
        .await
        .map_err(|e| e.to_string())?;
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    // TLS 1.3 reports a refused client certificate only on the first read: send a request.
    tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    tls.read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
    if !buf.starts_with(b"HTTP/1.1 200") {
        return Err(String::from_utf8_lossy(&buf).into_owned());
    }
    let cert = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    Ok(cert)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_certificate_and_the_crl_rotate_under_load_without_a_failed_request() {
    let mut pki = Pki::new();
    let good = |l: &mut Leaf| uri(l, "spiffe://corp.example/team/risk");
    pki.client("load", good);
    let victim = pki.client("victim", good);
    let stack = Arc::new(start(&pki, "optional", "").await);
    let before = served_certificate(&pki, &stack, "victim").await.unwrap();

    // The load: kept-alive connections (one client each) and a fresh connection per request.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for worker in 0..6 {
        let (stack, stop, done) = (stack.clone(), stop.clone(), done.clone());
        let kept = https(&pki, Some("load"));
        let pki_dir = pki.dir.clone();
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let client = if worker % 2 == 0 {
                    kept.clone()
                } else {
                    reqwest::Client::builder()
                        .tls_backend_preconfigured(client_tls(
                            &pki_dir.join("ca.pem"),
                            Some((&pki_dir.join("load.pem"), &pki_dir.join("load.key"))),
                        ))
                        .timeout(Duration::from_secs(10))
                        .build()
                        .unwrap()
                };
                match chat(&client, &stack, None).await {
                    Ok((200, _)) => {}
                    other => failures.push(format!("{other:?}")),
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            failures
        }));
    }
    let wait_done = |n: usize| {
        let done = done.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            while done.load(Ordering::Relaxed) < n {
                assert!(Instant::now() < deadline, "load stalled");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    wait_done(50).await;

    // A new server certificate and a CRL revoking the victim, written while the load runs.
    let renewed = pki
        .root
        .issue(&Leaf::server(
            "localhost",
            &["localhost"],
            &[std::net::Ipv4Addr::LOCALHOST.into()],
        ))
        .unwrap();
    pki.save("server", &renewed);
    pki.revoke(&victim);

    // New handshakes see the new material (the files are polled every 50 ms).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match served_certificate(&pki, &stack, "load").await {
            Ok(cert) if cert != before => break,
            Ok(_) => {}
            Err(e) => panic!("a handshake failed during rotation: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_certificate(&pki, &stack, "victim").await.is_err());
    let at_swap = done.load(Ordering::Relaxed);
    wait_done(at_swap + 50).await;
    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.unwrap());
    }
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    assert!(
        metric(
            &https(&pki, Some("load")),
            &stack,
            "sovereign_tls_reloads_total"
        )
        .await
            >= 1.0
    );

    // A broken file keeps the old material serving, and says so in /metrics.
    std::fs::write(pki.path("crl.pem"), "not a crl").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(
        &https(&pki, Some("load")),
        &stack,
        "sovereign_tls_reload_failing",
    )
    .await
        < 1.0
    {
        assert!(
            Instant::now() < deadline,
            "the broken CRL was never noticed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_certificate(&pki, &stack, "load").await.is_ok());
    assert!(served_certificate(&pki, &stack, "victim").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_dribbling_and_garbage_clients_are_cut_off() {
    let pki = Pki::new();
    let stack = start(&pki, "optional", "").await;
    let addr = ("127.0.0.1", port(&stack));

    // Opens TCP and says nothing: closed after the 500 ms handshake timeout.
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf))
        .await
        .expect("a silent client was never cut off");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    assert!(started.elapsed() >= Duration::from_millis(400));

    // Dribbles a ClientHello one byte at a time: cut off too.
    let started = Instant::now();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let hello = [
        0x16u8, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    let mut cut = false;
    for _ in 0..100 {
        for b in hello {
            if slow.write_all(&[b]).await.is_err() {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if cut || started.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    if !cut {
        let n = tokio::time::timeout(Duration::from_secs(5), slow.read(&mut buf))
            .await
            .expect("a dribbling client was never cut off");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(5));

    // Garbage and plain HTTP on the TLS port: closed, and the gateway keeps serving.
    for junk in [
        b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(),
        (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
    ] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(&junk).await;
        let mut sink = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut sink)).await;
        assert!(r.is_ok(), "garbage connection left open");
    }
    assert!(
        metric(
            &https(&pki, None),
            &stack,
            "sovereign_tls_handshake_timeouts_total"
        )
        .await
            >= 2.0
    );
    assert!(
        metric(
            &https(&pki, None),
            &stack,
            "sovereign_tls_handshake_failures_total"
        )
        .await
            >= 2.0
    );
    assert_eq!(
        chat(&https(&pki, None), &stack, Some(&stack.member_key))
            .await
            .unwrap()
            .0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_behind_mutual_tls_is_reached_with_a_private_ca_and_a_client_certificate() {
    let mut pki = Pki::new();
    pki.client("gateway-client", |l| {
        uri(l, "spiffe://corp.example/team/risk");
    });
    // The upstream: a gateway that requires client certificates (an OpenAI-compatible server
    // behind mTLS, as an mTLS proxy in front of vLLM would be).
    let upstream = start(&pki, "required", "").await;
    let upstream_url = format!("{}/v1", base(&upstream));
    let p = |f: &str| format!("{:?}", pki.path(f).display().to_string());
    let model = |id: &str, tls: &str| {
        format!(
            "[[models]]\nid = \"{id}\"\nupstream_model = \"llama-3.2-3b-instruct\"\nfamily = \"llama\"\nkind = \"chat\"\n\
             languages = [\"en\"]\nregion = \"sa-riyadh-1\"\nlocal = true\nbase_url = \"{upstream_url}\"\n{tls}\n"
        )
    };
    let models = format!(
        "{}{}",
        model(
            "behind-mtls",
            &format!(
                "tls = {{ ca = [{}], cert = {}, key = {} }}",
                p("ca.pem"),
                p("gateway-client.pem"),
                p("gateway-client.key")
            )
        ),
        model(
            "behind-mtls-no-cert",
            &format!("tls = {{ ca = [{}] }}", p("ca.pem"))
        ),
    );
    let front = Stack::start(move |t| format!("{t}\n{models}")).await;
    let ask = |model: &str| {
        front
            .post("/v1/chat/completions")
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
    };
    let res = ask("behind-mtls").await.unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"], "behind-mtls");
    // Without the client certificate the upstream refuses the handshake: a clear 5xx.
    let res = ask("behind-mtls-no-cert").await.unwrap();
    assert!(res.status().is_server_error(), "{}", res.status());
}
