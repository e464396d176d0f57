//! The contract lives in the repository (issue 46 item 1): every clause number the code, the
//! tests and the docs cite (`SPEC P3.1`, `(G2.3)`, `P3.5-P3.9`, `R5.1 to R5.6`) has its entry in
//! `docs/spec.md`, and no file of the repository refers to a path outside it (the contract once
//! lived in a directory beside the repository: a dead link in a clone).
//!
//! Plain std: the tree is walked from `CARGO_MANIFEST_DIR`, skipping build output (`target/`,
//! `node_modules/`, `dist/`, `.git`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The sources whose text is scanned for clause citations.
const CITING: &[&str] = &[
    "rs", "md", "py", "ts", "mjs", "js", "in", "c", "h", "zig", "sh", "wit", "wat", "toml",
];

/// This file, as the scan names it.
const SELF: &str = "tests/spec_citations.rs";

/// Directories never scanned: build output and installed packages.
const SKIPPED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "dist",
    ".git",
    "__pycache__",
    ".venv",
    ".pytest_cache",
];

/// What a file must not mention: the places outside the repository the contract and the notes
/// once lived in. Built from pieces so that this file does not mention them itself.
fn outside_needles() -> Vec<String> {
    vec![
        ["..", "/shared"].concat(),
        ["shared", "/SPEC"].concat(),
        ["PERFORMANCE", "-NOTES"].concat(),
        ["/work", "/shared"].concat(),
    ]
}

/// Every file under `root`, build output left out, in a stable order.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_ref()) {
                    stack.push(path);
                }
            } else if kind.is_file() && name != ".git" {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A clause number as the docs and code write it: `P3.1`, `G5`, `R1`, `L2`. One letter of P, R,
/// G, L, one digit, and optionally a dot and a number; not inside a longer word (`GP2`,
/// `P2x`) and not a longer number (`P99` is no clause).
fn clause_at(text: &[u8], at: usize) -> Option<(String, usize)> {
    let letter = *text.get(at)?;
    if !matches!(letter, b'P' | b'R' | b'G' | b'L') {
        return None;
    }
    if at > 0 && is_word(text[at - 1]) {
        return None;
    }
    let major = *text.get(at + 1)?;
    if !major.is_ascii_digit() {
        return None;
    }
    let mut end = at + 2;
    if text.get(end).is_some_and(|b| b.is_ascii_digit()) {
        return None;
    }
    if text.get(end) == Some(&b'.') && text.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end += 1;
        while text.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    if text.get(end).is_some_and(|b| is_word(*b)) {
        return None;
    }
    Some((String::from_utf8_lossy(&text[at..end]).into_owned(), end))
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The clauses a range stands for: `P3.10-P3.12` and `R5.1 to R5.6` (same group), `R1 to R4`
/// and `G1 to G5` (same letter). Anything else is just its two ends.
fn expand(from: &str, to: &str) -> Vec<String> {
    let split = |c: &str| -> Option<(String, u32, Option<u32>)> {
        let (head, minor) = match c.split_once('.') {
            Some((head, minor)) => (head, Some(minor.parse().ok()?)),
            None => (c, None),
        };
        let letter = head.get(..1)?.to_owned();
        Some((letter, head.get(1..)?.parse().ok()?, minor))
    };
    let (Some(a), Some(b)) = (split(from), split(to)) else {
        return vec![from.to_owned(), to.to_owned()];
    };
    match (a, b) {
        ((la, ma, Some(na)), (lb, mb, Some(nb))) if la == lb && ma == mb && na <= nb => {
            (na..=nb).map(|n| format!("{la}{ma}.{n}")).collect()
        }
        ((la, ma, None), (lb, mb, None)) if la == lb && ma <= mb => {
            (ma..=mb).map(|m| format!("{la}{m}")).collect()
        }
        _ => vec![from.to_owned(), to.to_owned()],
    }
}

/// Every clause cited in `text`, with its line number, ranges expanded.
fn citations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let Some((clause, end)) = clause_at(bytes, at) else {
                at += 1;
                continue;
            };
            // A range: `-` or ` to ` and a second clause of the same letter.
            let rest = &line[end..];
            let second = ["-", "–", " to "]
                .iter()
                .find_map(|sep| rest.strip_prefix(sep).map(|r| end + (rest.len() - r.len())))
                .and_then(|start| clause_at(bytes, start));
            match second {
                Some((to, after)) if to.get(..1) == clause.get(..1) => {
                    out.extend(expand(&clause, &to).into_iter().map(|c| (index + 1, c)));
                    at = after;
                }
                _ => {
                    out.push((index + 1, clause));
                    at = end;
                }
            }
        }
    }
    out
}

/// The clauses `docs/spec.md` has an entry for: each bold number (`**P3.1**`) and each group
/// heading (`### P1. The pipeline`, `### R1-R4. ...`).
fn entries(spec: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in spec.lines() {
        let mut rest = line;
        while let Some(start) = rest.find("**") {
            let after = &rest[start + 2..];
            let Some(stop) = after.find("**") else { break };
            let inner = &after[..stop];
            if let Some((clause, end)) = clause_at(inner.as_bytes(), 0) {
                if end == inner.len() {
                    out.insert(clause);
                }
            }
            if inner == "X" {
                out.insert("X".to_owned());
            }
            rest = &after[stop + 2..];
        }
        if let Some(heading) = line.strip_prefix("##") {
            let heading = heading.trim_start_matches('#').trim_start();
            let title = heading.split(". ").next().unwrap_or_default();
            out.extend(citations(title).into_iter().map(|(_, c)| c));
        }
    }
    out
}

/// What is wrong with the tree at `root`: each citation of a clause `docs/spec.md` has no entry
/// for, and each mention of a path outside the repository, as `file:line: problem`.
fn problems(root: &Path) -> Vec<String> {
    let spec_path = root.join("docs/spec.md");
    let Ok(spec) = std::fs::read_to_string(&spec_path) else {
        return vec![format!("{}: missing", spec_path.display())];
    };
    let known = entries(&spec);
    let needles = outside_needles();
    let mut out = Vec::new();
    for file in files(root) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text
        };
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (index, line) in text.lines().enumerate() {
            if let Some(needle) = needles.iter().find(|n| line.contains(n.as_str())) {
                out.push(format!(
                    "{shown}:{}: refers to `{needle}`, outside the repository",
                    index + 1
                ));
            }
        }
        // This file's own examples of unknown clauses are the scanner's test, not citations.
        let cites = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| CITING.contains(&e))
            && shown != SELF;
        if !cites {
            continue;
        }
        for (line, clause) in citations(&text) {
            if !known.contains(&clause) {
                out.push(format!(
                    "{shown}:{line}: cites {clause}, which docs/spec.md has no entry for"
                ));
            }
        }
    }
    out
}

#[test]
fn every_cited_clause_has_its_entry_and_nothing_points_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems = problems(root);
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_spec_has_every_clause_of_the_contract() {
    let spec = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/spec.md"))
        .unwrap_or_default();
    let known = entries(&spec);
    let mut expected: Vec<String> = Vec::new();
    for (group, count) in [
        ("P1", 5),
        ("P2", 10),
        ("P3", 13),
        ("R0", 4),
        ("R5", 11),
        ("G1", 5),
        ("G2", 4),
        ("G3", 3),
        ("G4", 2),
        ("G5", 11),
    ] {
        expected.extend((1..=count).map(|n| format!("{group}.{n}")));
    }
    for clause in ["R1", "R2", "R3", "R4", "L1", "L2", "L3", "X"] {
        expected.push(clause.to_owned());
    }
    let missing: Vec<&String> = expected.iter().filter(|c| !known.contains(*c)).collect();
    assert!(missing.is_empty(), "docs/spec.md lacks {missing:?}");
    // Exact strings of the contract, kept verbatim.
    for exact in [
        "`Plugin 'Acme' registered a raw hook.`",
        "`Raw hook 'Acme' changed this model request. The failure may be related.`",
        "**5 s**",
        "**independent 10 s**",
        "`image/png`, `image/jpeg`, `image/gif` and\n  `image/webp`",
        "`command:nwe`",
        "\"gateway:sessions.reset\"",
    ] {
        assert!(spec.contains(exact), "docs/spec.md lacks {exact}");
    }
    // Every clause anchored, so `docs/spec.md#p31` links work.
    for clause in &expected {
        let id = format!("<a id=\"{}\"></a>", clause.to_lowercase().replace('.', ""));
        assert!(spec.contains(&id), "docs/spec.md has no anchor {id}");
    }
}

/// The scanner itself, on a small tree: it names the file and line of an unknown clause (also
/// inside a range) and of a path outside the repository, and accepts what the spec holds.
#[test]
fn the_scanner_names_each_unknown_citation_by_file_and_line() {
    let dir = std::env::temp_dir().join(format!("hookline-spec-citations-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).ok();
        }
        std::fs::write(path, text).ok();
    };
    write(
        "docs/spec.md",
        "## P. Ordinary\n### P3. Rules\n- <a id=\"p31\"></a>**P3.1** one\n- **P3.2** two\n\
         - **P3.3** three\n### R1-R4. Raw\n| **R1** | a |\n| **R2** | b |\n",
    );
    write(
        "src/lib.rs",
        "// SPEC P3.1\n// fine (P3.2, R1 to R2) and P3 and P99 and GP3.1\n\
         // SPEC P3.14: no such clause\n// ranges: P3.1-P3.4\n",
    );
    write(
        "docs/guide.md",
        &format!("see [the spec]({}/SPEC.md)\n", ["..", "/shared"].concat()),
    );
    write("target/debug/build.rs", "// SPEC P9.9 in build output\n");
    write("notes.txt", "P7.7 in a file of no citing kind\n");
    let found = problems(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        found,
        vec![
            format!(
                "docs/guide.md:1: refers to `{}`, outside the repository",
                ["..", "/shared"].concat()
            ),
            "src/lib.rs:3: cites P3.14, which docs/spec.md has no entry for".to_owned(),
            "src/lib.rs:4: cites P3.4, which docs/spec.md has no entry for".to_owned(),
        ]
    );
}

#[test]
fn citations_read_ranges_and_leave_other_words_alone() {
    let cited =
        |text: &str| -> Vec<String> { citations(text).into_iter().map(|(_, c)| c).collect() };
    assert_eq!(cited("SPEC P3.10 to P3.12."), ["P3.10", "P3.11", "P3.12"]);
    assert_eq!(cited("(SPEC R0 to R2)"), ["R0", "R1", "R2"]);
    assert_eq!(
        cited("SPEC P3.5-P3.9, R5"),
        ["P3.5", "P3.6", "P3.7", "P3.8", "P3.9", "R5"]
    );
    assert_eq!(cited("p50 P99 GP2 P2x X5 L10"), Vec::<String>::new());
    assert_eq!(cited("`G5.x` and G2."), ["G5", "G2"]);
}
