//! The `transform_model` and `rebuild_model` rules (`messages::rules`, SPEC P3.5-P3.9, R5) on a
//! 100-item request: pure functions, timed without the clone that builds each proposal
//! (`clone_request` shows what that clone alone costs). Run with `cargo bench --bench rules`.
#![allow(missing_docs)] // criterion's macros generate undocumented items
#![allow(clippy::expect_used)] // the proposals are built to be admitted

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use hookline::messages::model::{HeldImages, Item, ItemBody, ModelRequest, Purpose};
use hookline::messages::rules::rebuild::rebuild_model;
use hookline::messages::rules::transform::transform_model;
use serde_json::json;

const ITEMS: usize = 100;

/// A system message, then user / assistant / tool call / tool result / reasoning rounds.
fn request() -> ModelRequest {
    let mut items = vec![Item::new(
        "sys",
        ItemBody::System {
            text: "You are a careful coding agent.".into(),
            images: Vec::new(),
        },
    )];
    for n in 0..ITEMS - 1 {
        let text = format!("item {n}: some ordinary conversation text of a few words");
        let body = match n % 5 {
            0 => ItemBody::User {
                text,
                images: Vec::new(),
            },
            1 => ItemBody::Reasoning {
                text,
                provider_state: Some("opaque".into()),
            },
            2 => ItemBody::ToolCall {
                call_id: format!("c{n}"),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/f{n}.rs")}),
            },
            3 => ItemBody::ToolResult {
                call_id: format!("c{}", n - 1),
                name: "read_file".into(),
                text,
                images: Vec::new(),
                success: true,
            },
            _ => ItemBody::Assistant {
                text,
                images: Vec::new(),
            },
        };
        items.push(Item::new(format!("i{n}"), body));
    }
    ModelRequest::new(Purpose::Work, false, items)
}

/// What a transform plugin sends back: every user text rewritten (a redaction), nothing else.
fn transformed(before: &ModelRequest) -> ModelRequest {
    let mut proposed = before.clone();
    for item in proposed.items.to_mut() {
        if matches!(item.body, ItemBody::User { .. }) {
            if let ItemBody::User { text, .. } = &mut std::sync::Arc::make_mut(item).body {
                text.push_str(" [checked]");
            }
        }
    }
    proposed
}

/// What a rebuild plugin sends back: old reasoning dropped, the last two items swapped, a new
/// user item added.
fn rebuilt(before: &ModelRequest) -> ModelRequest {
    let mut proposed = before.clone();
    proposed
        .items
        .to_mut()
        .retain(|item| !matches!(item.body, ItemBody::Reasoning { .. }));
    let len = proposed.items.len();
    proposed.items.to_mut().swap(len - 1, len - 2);
    proposed.items.push(
        Item::new(
            "added",
            ItemBody::User {
                text: "Remember the house rules.".into(),
                images: Vec::new(),
            },
        )
        .into(),
    );
    proposed
}

fn rules(c: &mut Criterion) {
    let before = request();
    let held = HeldImages::default();
    let transform = transformed(&before);
    let rebuild = rebuilt(&before);
    transform_model(&before, transform.clone()).expect("a text-only transform is admitted");
    rebuild_model(&held, &before, rebuild.clone()).expect("the rebuild is admitted");
    let mut group = c.benchmark_group("rules_100_items");
    group.bench_function("clone_request", |b| b.iter(|| black_box(before.clone())));
    group.bench_function("transform_model", |b| {
        b.iter_batched(
            || transform.clone(),
            |proposed| transform_model(&before, proposed),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("rebuild_model", |b| {
        b.iter_batched(
            || rebuild.clone(),
            |proposed| rebuild_model(&held, &before, proposed),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, rules);
criterion_main!(benches);
