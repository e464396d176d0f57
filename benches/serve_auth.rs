//! What auth costs and whether one tenant's flood reaches another (issue 48 items 5 and 6,
//! docs/performance.md "Auth's cost"). In one process, with the echo model and the file store:
//!
//! 1. **Cost**: a server without credentials (loopback, no keys) and a server with an API key
//!    table and JWTs checked against a JWKS served over HTTP by this bench, driven by the load
//!    driver (`hookline load`'s) in interleaved rounds: no credential, a client's API key, a
//!    client's JWT, and a JWT while the JWKS is fetched again every `FLOOR` (a request naming
//!    an unknown `kid` in the background). Then, one client at a time, what each credential adds
//!    to one request (`GET /v1/whoami`; a JWT new to the server is verified in full), and the
//!    time one refresh adds to the request that asks for it (a `kid` the kept copy lacks,
//!    against the same request with a known `kid`).
//! 2. **Two tenants**: tenant `flood` (limited to `FLOOD_RATE` turns/s) sends turns as fast as
//!    `FLOODERS` clients can and is mostly refused (429), while tenant `steady` runs its load;
//!    its p50/p99 with and without the flood, interleaved rounds.
//!
//! Printed: each round's figures, the medians, and the load average. Run with
//! `cargo bench --bench serve_auth` (a plain timed driver, not criterion); `SERVE_AUTH=cost` or
//! `SERVE_AUTH=tenants` runs one part. Figures: docs/performance.md, "Auth's cost".
#![allow(missing_docs)]
#![allow(clippy::expect_used, clippy::unwrap_used)] // a bench that cannot start has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hookline::cli::load::{LoadOptions, LoadReport};
use hookline::host::gateway::GatewayLimits;
use hookline::host::provider::EchoProvider;
use hookline::host::store::{ApiKeyRecord, ApiKeyTable, FileApiKeys, Role};
use hookline::host::Host;
use hookline::server::{
    install_recorder, start, JwksSource, JwtAlgorithm, JwtSettings, KeyTable, ServeConfig,
    ServeHandle, TenantLimits, TenantPolicy, Tenants,
};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use support::{load_average, load_on_own_runtime, median, on_own_runtime, serve_on_own_runtime};

const ROUNDS: usize = 5;
const CLIENTS: usize = 32;
const TURNS: usize = 40;
/// The JWKS refetch floor of the server with JWTs: short, so the refresh run refreshes often.
const FLOOR: Duration = Duration::from_millis(100);
/// Probes of one refresh.
const PROBES: usize = 20;
/// Sequential requests per case and round for the per-request cost.
const PROBES_EACH: usize = 400;

const STEADY_SESSIONS: usize = 4;
const STEADY_TURNS: usize = 150;
const FLOODERS: usize = 8;
const FLOOD_RATE: u32 = 20;

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// An identity provider's ES256 key.
struct Signer {
    der: Vec<u8>,
    point: Vec<u8>,
}

impl Signer {
    fn new() -> Self {
        let pair = rcgen::KeyPair::generate().unwrap();
        Self {
            der: pair.serialize_der(),
            point: pair.public_key_raw().to_vec(),
        }
    }

    fn jwk(&self, kid: &str) -> Value {
        json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&self.point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&self.point[33..]),
        })
    }

    fn token(&self, kid: &str) -> String {
        self.token_numbered(kid, 0)
    }

    /// A token of its own (`jti`): the server has not verified it before.
    fn token_numbered(&self, kid: &str, jti: usize) -> String {
        let claims = json!({
            "iss": "https://idp.example", "aud": "hookline", "sub": "bench",
            "exp": now_s() + 3600, "tenant": "acme", "role": "client", "jti": jti,
        });
        let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.into());
        encode(&header, &claims, &EncodingKey::from_ec_der(&self.der)).unwrap()
    }
}

/// The JWKS endpoint: its keys, and how often it was fetched.
struct Idp {
    keys: Mutex<Vec<Value>>,
    fetches: AtomicUsize,
}

/// Serves the JWKS on a thread of its own; its URL.
fn idp(idp: Arc<Idp>) -> String {
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || async move {
            idp.fetches.fetch_add(1, Ordering::SeqCst);
            let keys = idp.keys.lock().unwrap().clone();
            axum::Json(json!({ "keys": keys }))
        }),
    );
    format!("http://{}/jwks.json", serve_on_own_runtime(app))
}

/// A server over the echo model; its base URL and handle.
async fn server(
    dir: &Path,
    arbiters: &[actix::Arbiter],
    config: impl FnOnce(&mut ServeConfig),
) -> (String, ServeHandle) {
    let gateway = Host::builder()
        .provider(Arc::new(EchoProvider::new()))
        .workspace(dir)
        .spaces_root(dir)
        .start_gateway(GatewayLimits {
            arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
            ..GatewayLimits::default()
        })
        .expect("the gateway starts");
    let mut serve_config = ServeConfig::new(dir);
    config(&mut serve_config);
    let (addr, handle) = start(gateway, serve_config).await.unwrap();
    (format!("http://{addr}"), handle)
}

async fn add_key(table: &FileApiKeys, tenant: &str) -> String {
    let (key, record) = ApiKeyRecord::create(tenant, Role::Client, None, None, now_ms()).unwrap();
    table.insert(&record).await.unwrap();
    key
}

/// The load driver on a thread and runtime of its own, as `hookline load` runs.
async fn load(url: &str, token: Option<&str>, sessions: usize, turns: usize) -> LoadReport {
    let options = LoadOptions {
        token: token.map(str::to_owned),
        ..LoadOptions::new(url, sessions, turns)
    };
    let report = load_on_own_runtime(options).await;
    assert_eq!(
        report.error_count(),
        0,
        "every turn is answered: {:?}",
        report.errors
    );
    report
}

/// How long `GET /v1/sessions` takes with `token`, and its status.
async fn timed(client: &reqwest::Client, url: &str, token: &str) -> (Duration, u16) {
    let asked = Instant::now();
    let response = client
        .get(format!("{url}/v1/sessions"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let _ = response.bytes().await;
    (asked.elapsed(), status)
}

#[derive(Default)]
struct Figures {
    per_second: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
}

impl Figures {
    fn add(&mut self, report: &LoadReport) {
        self.per_second.push(report.turns_per_second);
        self.p50.push(report.p50_ms);
        self.p99.push(report.p99_ms);
    }

    fn line(&self, name: &str) -> String {
        format!(
            "  {name:<26} {:>6.0} turns/s  p50 {:>6.2} ms  p99 {:>6.2} ms   (rounds' p99: {})",
            median(self.per_second.clone()),
            median(self.p50.clone()),
            median(self.p99.clone()),
            self.p99
                .iter()
                .map(|v| format!("{v:.1}"))
                .collect::<Vec<_>>()
                .join(" / "),
        )
    }
}

async fn cost(arbiters: &[actix::Arbiter]) {
    let plain_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (plain, plain_handle) = server(plain_dir.path(), arbiters, |_| {}).await;
    let auth_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let table = Arc::new(FileApiKeys::new(auth_dir.path()));
    let key = add_key(&table, "acme").await;
    let signer = Signer::new();
    let provider = Arc::new(Idp {
        keys: Mutex::new(vec![signer.jwk("k0")]),
        fetches: AtomicUsize::new(0),
    });
    let jwks_url = idp(provider.clone());
    let shared: Arc<dyn ApiKeyTable> = table;
    let (authed, authed_handle) = server(auth_dir.path(), arbiters, |config| {
        config.keys = Some(KeyTable(shared));
        config.jwt = Some(JwtSettings {
            jwks: JwksSource::Url(jwks_url),
            issuer: "https://idp.example".into(),
            audience: "hookline".into(),
            algorithm: JwtAlgorithm::ES256,
            tenant_claim: "tenant".into(),
            role_claim: "role".into(),
            refetch_floor: FLOOR,
        });
    })
    .await;
    let jwt = signer.token("k0");
    let mut runs: [(&str, Figures); 4] = Default::default();
    runs[0].0 = "no credentials";
    runs[1].0 = "API key";
    runs[2].0 = "JWT";
    runs[3].0 = "JWT, JWKS refreshing";
    let mut refreshes = 0;
    let before = load_average();
    for round in 0..ROUNDS {
        // Each round starts at another case, so no case always follows the same one.
        let count = runs.len();
        for case in (0..count).map(|i| (i + round) % count) {
            let report = match case {
                0 => load(&plain, None, CLIENTS, TURNS).await,
                1 => load(&authed, Some(&key), CLIENTS, TURNS).await,
                2 => load(&authed, Some(&jwt), CLIENTS, TURNS).await,
                _ => {
                    // A request naming a kid nobody has, every floor: each fetches the JWKS.
                    let stop = Arc::new(AtomicBool::new(false));
                    let fetched = provider.fetches.load(Ordering::SeqCst);
                    let refresher = {
                        let (stop, url) = (stop.clone(), authed.clone());
                        let unknown = signer.token("nobody");
                        tokio::spawn(async move {
                            let client = reqwest::Client::new();
                            while !stop.load(Ordering::SeqCst) {
                                tokio::time::sleep(FLOOR + Duration::from_millis(5)).await;
                                assert_eq!(timed(&client, &url, &unknown).await.1, 401);
                            }
                        })
                    };
                    let report = load(&authed, Some(&jwt), CLIENTS, TURNS).await;
                    stop.store(true, Ordering::SeqCst);
                    refresher.await.unwrap();
                    refreshes += provider.fetches.load(Ordering::SeqCst) - fetched;
                    report
                }
            };
            runs[case].1.add(&report);
        }
        println!(
            "round {round}: {}",
            runs.iter()
                .map(|(name, f)| format!("{name} p99 {:.1} ms", f.p99[round]))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Per request, one client, one request at a time: `GET /v1/whoami` (auth and a small
    // answer, no turn), medians of PROBES_EACH, interleaved rounds.
    let client = reqwest::Client::new();
    let fresh: Vec<String> = (0..ROUNDS * PROBES_EACH)
        .map(|i| signer.token_numbered("k0", i + 1))
        .collect();
    let mut fresh = fresh.into_iter();
    let mut per_request: [Vec<f64>; 4] = Default::default();
    for round in 0..ROUNDS {
        for case in (0..4).map(|i| (i + round) % 4) {
            let mut took = Vec::with_capacity(PROBES_EACH);
            for _ in 0..PROBES_EACH {
                let asked = Instant::now();
                let request = match case {
                    0 => client.get(format!("{plain}/v1/whoami")),
                    1 => client.get(format!("{authed}/v1/whoami")).bearer_auth(&key),
                    2 => client.get(format!("{authed}/v1/whoami")).bearer_auth(&jwt),
                    _ => client
                        .get(format!("{authed}/v1/whoami"))
                        .bearer_auth(fresh.next().unwrap()),
                };
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), 200);
                let _ = response.bytes().await;
                took.push(asked.elapsed().as_secs_f64() * 1e6);
            }
            per_request[case].push(median(took));
        }
    }
    let base = median(per_request[0].clone());
    let names = [
        "no credentials",
        "API key",
        "JWT (verified before)",
        "JWT (new: verified in full)",
    ];
    let per_request_lines: Vec<String> = names
        .iter()
        .zip(&per_request)
        .map(|(name, values)| {
            let value = median(values.clone());
            format!(
                "  {name:<28} {value:>7.1} us per request ({:+.1} us)",
                value - base
            )
        })
        .collect();
    // One refresh: a kid the kept copy lacks (the provider has it) against a known kid.
    let mut added = Vec::new();
    for probe in 0..PROBES {
        let kid = format!("r{probe}");
        provider.keys.lock().unwrap().push(signer.jwk(&kid));
        tokio::time::sleep(FLOOR).await;
        let (fresh, status) = timed(&client, &authed, &signer.token(&kid)).await;
        assert_eq!(status, 200);
        let (known, status) = timed(&client, &authed, &jwt).await;
        assert_eq!(status, 200);
        added.push((fresh.as_secs_f64() - known.as_secs_f64()) * 1000.0);
    }
    println!(
        "serve/auth cost: echo model, file store, {CLIENTS} clients x {TURNS} turns, \
         {ROUNDS} rounds interleaved, medians; load average {before} before, {} after",
        load_average()
    );
    for (name, figures) in &runs {
        println!("{}", figures.line(name));
    }
    println!("  one client, GET /v1/whoami, medians of {PROBES_EACH} x {ROUNDS} rounds:");
    for line in per_request_lines {
        println!("{line}");
    }
    println!(
        "  JWKS refreshes during the refreshing runs: {refreshes} (one per {FLOOR:?} floor)\n  \
         one refresh (JWKS on loopback) adds {:.2} ms at the median, {:.2} ms at most, \
         to the request naming the new kid ({PROBES} probes)",
        median(added.clone()),
        added.iter().copied().fold(0.0, f64::max),
    );
    plain_handle.drain("bench", None).await.unwrap();
    authed_handle.drain("bench", None).await.unwrap();
}

/// Tenant `flood`'s clients: turns until `stop`, each client one every `every` (`None`: as fast
/// as they go), on a thread and runtime of their own; (answered, refused 429) once stopped
/// (awaited, so the server's runtime, this one, keeps answering them meanwhile).
fn flood(
    url: String,
    key: String,
    stop: Arc<AtomicBool>,
    every: Option<Duration>,
) -> tokio::sync::oneshot::Receiver<(u64, u64)> {
    on_own_runtime(move || async move {
        let client = reqwest::Client::new();
        let (ok, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut clients = Vec::new();
        for _ in 0..FLOODERS {
            let opened: Value = client
                .post(format!("{url}/v1/sessions"))
                .bearer_auth(&key)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let turns = format!(
                "{url}/v1/sessions/{}/turns",
                opened["key"].as_str().unwrap()
            );
            let (client, key, stop) = (client.clone(), key.clone(), stop.clone());
            let (ok, refused) = (ok.clone(), refused.clone());
            clients.push(tokio::spawn(async move {
                let mut tick = every.map(tokio::time::interval);
                while !stop.load(Ordering::SeqCst) {
                    if let Some(tick) = &mut tick {
                        tick.tick().await;
                    }
                    let response = client
                        .post(&turns)
                        .bearer_auth(&key)
                        .json(&json!({ "text": "flood" }))
                        .send()
                        .await
                        .unwrap();
                    match response.status().as_u16() {
                        200 => ok.fetch_add(1, Ordering::Relaxed),
                        429 => refused.fetch_add(1, Ordering::Relaxed),
                        other => panic!("the flood got {other}"),
                    };
                    let _ = response.bytes().await;
                }
            }));
        }
        for client in clients {
            client.await.unwrap();
        }
        (ok.load(Ordering::Relaxed), refused.load(Ordering::Relaxed))
    })
}

async fn two_tenants(arbiters: &[actix::Arbiter]) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let flood_key = add_key(&table, "flood").await;
    let steady_key = add_key(&table, "steady").await;
    let limited = TenantPolicy {
        limits: TenantLimits {
            turns_per_second: std::num::NonZeroU32::new(FLOOD_RATE),
            ..TenantLimits::default()
        },
        ..TenantPolicy::default()
    };
    let shared: Arc<dyn ApiKeyTable> = table;
    let (url, handle) = server(dir.path(), arbiters, |config| {
        config.keys = Some(KeyTable(shared));
        config.tenants = Tenants {
            default: TenantPolicy::default(),
            named: [("flood".to_owned(), limited)].into(),
        };
    })
    .await;
    // Alone; beside a flood at five times the limit; beside one as fast as its clients go.
    let paced = Duration::from_secs(1) * FLOODERS as u32 / (FLOOD_RATE * 5);
    let cases = [
        ("steady alone", None),
        ("steady, flood at 5x limit", Some(Some(paced))),
        ("steady, flood unpaced", Some(None)),
    ];
    let mut figures: [Figures; 3] = Default::default();
    let mut floods = [(0u64, 0u64, 0.0f64); 3];
    let before = load_average();
    for round in 0..ROUNDS {
        let count = cases.len();
        for case in (0..count).map(|i| (i + round) % count) {
            let stop = Arc::new(AtomicBool::new(false));
            let flooding = cases[case]
                .1
                .map(|every| flood(url.clone(), flood_key.clone(), stop.clone(), every));
            let started = Instant::now();
            figures[case].add(&load(&url, Some(&steady_key), STEADY_SESSIONS, STEADY_TURNS).await);
            stop.store(true, Ordering::SeqCst);
            if let Some(flooding) = flooding {
                let (ok, no) = flooding.await.unwrap();
                floods[case].0 += ok;
                floods[case].1 += no;
                floods[case].2 += started.elapsed().as_secs_f64();
            }
        }
        println!(
            "round {round}: steady p99 {}",
            cases
                .iter()
                .zip(&figures)
                .map(|((name, _), f)| format!("{name} {:.2} ms", f.p99[round]))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "serve/auth two tenants: echo model, file store, steady {STEADY_SESSIONS} clients x \
         {STEADY_TURNS} turns, flood {FLOODERS} clients against {FLOOD_RATE} turns/s allowed, \
         {ROUNDS} rounds interleaved, medians; load average {before} before, {} after",
        load_average()
    );
    for (((name, _), figures), (ok, no, seconds)) in cases.iter().zip(&figures).zip(floods) {
        let flood = if seconds > 0.0 {
            format!(
                "; flood {:.0} answered/s, {:.0} refused (429)/s",
                ok as f64 / seconds,
                no as f64 / seconds
            )
        } else {
            String::new()
        };
        println!("{}{flood}", figures.line(name));
    }
    handle.drain("bench", None).await.unwrap();
}

fn main() {
    install_recorder();
    let system = actix::System::new();
    let arbiters: Vec<actix::Arbiter> = (0..std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get))
        .map(|_| actix::Arbiter::new())
        .collect();
    let part = std::env::var("SERVE_AUTH").unwrap_or_default();
    system.block_on(async {
        if part != "tenants" {
            cost(&arbiters).await;
        }
        if part != "cost" {
            two_tenants(&arbiters).await;
        }
    });
    for arbiter in arbiters {
        arbiter.stop();
    }
}
