//! The operator console (issue 16, docs/console.md): the single page `hookline serve` serves at
//! `/`, with its assets under `/assets/`. The page is plain TypeScript built by esbuild into
//! `console/dist/`, which is committed and embedded here, so `cargo build` needs no Node and the
//! page fetches nothing from anywhere but this server.
//!
//! The page and its assets hold no data, so they need no token; the page asks the operator for
//! the token and sends it on every `/v1/*` request as `Authorization: Bearer` (never in a URL or
//! a cookie). Every answer here carries a strict Content-Security-Policy: scripts, styles and
//! connections from this origin only, no inline script or style, no framing.
//!
//! ```text
//! let app = Router::new().merge(console::routes()).merge(api);
//! ```

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The Content-Security-Policy of every console answer: everything from this origin only, no
/// inline script or style (the page sets no `style` attribute and uses no `innerHTML`), no
/// plugins, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; object-src 'none'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The SHA-256 of the console's sources when `console/dist` was built (`console/build.mjs`
/// writes it; a test recomputes it from the sources).
pub const SOURCE_HASH: &str = include_str!("../../console/dist/source-hash.txt");

const INDEX: &[u8] = include_bytes!("../../console/dist/index.html");

/// One embedded asset.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: [Asset; 3] = [
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../console/dist/assets/app.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../console/dist/assets/style.css"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../../console/dist/assets/icon.svg"),
    },
];

/// The console's routes: `GET /` (the page) and `GET /assets/{file}`. Mount them beside the API,
/// outside its auth layer: `.merge(console::routes())`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    answer(&headers, "text/html; charset=utf-8", INDEX)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(found) => answer(&headers, found.content_type, found.body),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The entity tag of every asset: they change together, with the sources' hash.
fn etag() -> HeaderValue {
    let hash = SOURCE_HASH.trim();
    let short = hash.get(..16).unwrap_or(hash);
    HeaderValue::from_str(&format!("\"{short}\"")).unwrap_or(HeaderValue::from_static("\"0\""))
}

/// `body` with the console's headers, or 304 when the client holds this build already.
fn answer(request: &HeaderMap, content_type: &'static str, body: &'static [u8]) -> Response {
    let etag = etag();
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .is_some_and(|tags| tags.as_bytes() == etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body.into_response()
    };
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 6] = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // Revalidate every time (a 304 is cheap): a new binary serves a new console at once.
        (header::CACHE_CONTROL, "no-cache"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(header::ETAG, etag);
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use sha2::{Digest, Sha256};
    use std::path::{Path as FsPath, PathBuf};
    use tower::ServiceExt as _;

    fn console_dir() -> PathBuf {
        FsPath::new(env!("CARGO_MANIFEST_DIR")).join("../console")
    }

    fn ts_files(dir: &FsPath, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                ts_files(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "ts") {
                out.push(path);
            }
        }
        Ok(())
    }

    /// The hash `console/build.mjs` records, by the same rule (see its opening comment).
    fn source_hash() -> std::io::Result<String> {
        let root = console_dir();
        let mut files: Vec<PathBuf> = ["index.html", "style.css", "icon.svg", "build.mjs"]
            .iter()
            .map(|f| root.join(f))
            .collect();
        ts_files(&root.join("src"), &mut files)?;
        let mut named: Vec<(String, PathBuf)> = files
            .into_iter()
            .map(|f| {
                let name = f
                    .strip_prefix(&root)
                    .unwrap_or(&f)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                (name, f)
            })
            .collect();
        named.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut hash = Sha256::new();
        for (name, file) in named {
            let bytes = std::fs::read(&file)?;
            hash.update(format!("{name}\n{}\n", bytes.len()));
            hash.update(&bytes);
            hash.update(b"\n");
        }
        Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    #[test]
    fn console_dist_matches_sources() -> std::io::Result<()> {
        let now = source_hash()?;
        assert_eq!(
            now,
            SOURCE_HASH.trim(),
            "console/dist was built from other sources: run `npm run build` in console/ and \
             commit console/dist"
        );
        Ok(())
    }

    async fn get(path: &str, if_none_match: Option<&str>) -> Response {
        let mut request = Request::get(path);
        if let Some(tag) = if_none_match {
            request = request.header(header::IF_NONE_MATCH, tag);
        }
        let request = request.body(Body::empty()).unwrap_or_default();
        match routes::<()>().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    fn header_of<'r>(response: &'r Response, name: &HeaderName) -> &'r str {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[tokio::test]
    async fn page_and_assets_carry_their_type_and_the_strict_headers() {
        for (path, content_type) in [
            ("/", "text/html; charset=utf-8"),
            ("/assets/app.js", "text/javascript; charset=utf-8"),
            ("/assets/style.css", "text/css; charset=utf-8"),
            ("/assets/icon.svg", "image/svg+xml"),
        ] {
            let response = get(path, None).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert_eq!(header_of(&response, &header::CONTENT_TYPE), content_type);
            let csp = header_of(&response, &header::CONTENT_SECURITY_POLICY);
            for directive in [
                "default-src 'self'",
                "script-src 'self'",
                "style-src 'self'",
                "connect-src 'self'",
                "frame-ancestors 'none'",
            ] {
                assert!(csp.contains(directive), "{path}: {csp} lacks {directive}");
            }
            assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
            assert_eq!(
                header_of(&response, &header::X_CONTENT_TYPE_OPTIONS),
                "nosniff"
            );
            assert_eq!(
                header_of(&response, &header::REFERRER_POLICY),
                "no-referrer"
            );
        }
    }

    #[tokio::test]
    async fn an_unknown_asset_is_not_found() {
        let response = get("/assets/../Cargo.toml", None).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let response = get("/assets/app.js.map", None).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_client_holding_this_build_gets_not_modified() {
        let first = get("/assets/app.js", None).await;
        let tag = header_of(&first, &header::ETAG).to_owned();
        assert!(tag.starts_with('"') && tag.len() > 2);
        let again = get("/assets/app.js", Some(&tag)).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let other = get("/assets/app.js", Some("\"stale\"")).await;
        assert_eq!(other.status(), StatusCode::OK);
    }

    #[test]
    fn the_page_names_only_embedded_assets_and_no_inline_script() {
        let page = String::from_utf8_lossy(INDEX);
        let named: Vec<&str> = page
            .split("/assets/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(named.len() >= 3, "{named:?}");
        for name in named {
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "{name} is not embedded"
            );
        }
        // Every <script> has a src: inline script would be refused by the policy anyway.
        for tag in page.split("<script").skip(1) {
            let open = tag.split('>').next().unwrap_or("");
            assert!(open.contains("src="), "an inline <script>: {open}");
        }
        assert!(!page.contains("style="), "an inline style attribute");
    }

    #[test]
    fn the_bundle_never_parses_text_as_html() {
        // Text from sessions and plugins goes in with textContent only (issue 16, item 3).
        let app = String::from_utf8_lossy(ASSETS[0].body);
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
        ] {
            assert!(!app.contains(sink), "the bundle uses {sink}");
        }
    }
}
