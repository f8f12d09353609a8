//! The catalog as it grows: 10, 1,000 and 10,000 tools (10 on one server,
//! 50 on each of 20, 50 on each of 200), with definitions of a usual size
//! (a description, an input schema of three arguments). For each size:
//!
//! - `build`: the catalog merged from every server's listing, as the host
//!   does when it starts;
//! - `update`: the catalog merged again after one server's list changed,
//!   reusing every other server's part;
//! - `page` and `walk`: the first page of `tools/list` (100 tools) read
//!   from the catalog, and every page of it in turn;
//! - `resolve`: a call's name resolved to its server and original name;
//! - `index` and `search`: a discovery view's search index made, and one
//!   query of three words ranked in it.
//!
//! Costs that grow faster than the catalog show as a ratio between sizes
//! above 100 (for 100 times the tools).
//!
//! Run: `cargo bench -p mcp-host --bench catalog`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_host::catalog::{Catalog, Source};
use mcp_host::upstream::Listing;
use mcp_host::views::search::SearchIndex;
use serde_json::{Value, json};

/// Tools on a page of `tools/list`.
const PAGE: usize = 100;

/// (servers, tools on each).
const SHAPES: [(usize, usize); 3] = [(1, 10), (20, 50), (200, 50)];

const VERBS: [&str; 10] = [
    "create", "delete", "list", "get", "update", "search", "archive", "export", "share", "count",
];
const OBJECTS: [&str; 5] = ["item", "folder", "label", "comment", "report"];

/// Server `index` of a catalog of `servers`, listing `tools` tools.
fn source(index: usize, tools: usize) -> Source {
    let name = format!("server{index}");
    let mut listing = Listing::default();
    listing.tools = (0..tools)
        .map(|n| {
            let verb = VERBS[n % VERBS.len()];
            let object = OBJECTS[(n / VERBS.len()) % OBJECTS.len()];
            let tool = json!({
                "name": format!("{verb}_{object}_{n}"),
                "description": format!("{verb}s a {object} of {name}: a sentence or two of the \
                    kind servers write, saying what the tool does and when to use it."),
                "inputSchema": {"type": "object", "properties": {
                    "id": {"type": "string", "description": "The item's id"},
                    "limit": {"type": "integer", "minimum": 1},
                    "query": {"type": "string", "description": "Words to look for"}},
                    "required": ["id"]},
                "annotations": {"readOnlyHint": verb == "get" || verb == "list"},
            });
            match tool {
                Value::Object(tool) => tool,
                _ => unreachable!("an object"),
            }
        })
        .collect();
    Source {
        index,
        namespace: name.clone(),
        name,
        listing: Arc::new(listing),
    }
}

fn catalog(c: &mut Criterion) {
    let mut group = c.benchmark_group("catalog");
    for (servers, per_server) in SHAPES {
        let total = servers * per_server;
        let sources: Vec<Source> = (0..servers).map(|i| source(i, per_server)).collect();
        group.bench_with_input(BenchmarkId::new("build", total), &sources, |b, sources| {
            b.iter(|| black_box(Catalog::build(sources)))
        });
        let catalog = Catalog::build(&sources);
        assert_eq!(catalog.tools().len(), total);
        let mut changed = sources.clone();
        changed[servers / 2] = source(servers / 2, per_server);
        group.bench_with_input(BenchmarkId::new("update", total), &changed, |b, changed| {
            b.iter(|| black_box(catalog.update(changed)))
        });
        group.bench_with_input(BenchmarkId::new("page", total), &catalog, |b, catalog| {
            b.iter(|| black_box(catalog.tools().page(0, PAGE)))
        });
        group.bench_with_input(BenchmarkId::new("walk", total), &catalog, |b, catalog| {
            b.iter(|| {
                let tools = catalog.tools();
                let mut read = 0;
                while read < tools.len() {
                    read += black_box(tools.page(read, PAGE)).len();
                }
                read
            })
        });
        let last = format!("server{}__count_report_{}", servers - 1, per_server - 1);
        let names: Vec<String> = catalog
            .tools()
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        assert!(catalog.tool(&names[names.len() - 1]).is_some(), "{last}");
        group.bench_with_input(BenchmarkId::new("resolve", total), &names, |b, names| {
            let mut n = 0;
            b.iter(|| {
                n = (n + 7919) % names.len();
                black_box(catalog.tool(&names[n]))
            })
        });
        group.bench_with_input(BenchmarkId::new("index", total), &catalog, |b, catalog| {
            b.iter(|| black_box(SearchIndex::new(catalog.tools())))
        });
        let index = SearchIndex::new(catalog.tools());
        group.bench_with_input(BenchmarkId::new("search", total), &index, |b, index| {
            b.iter(|| black_box(index.search("archive a folder report", 10)))
        });
    }
    group.finish();
}

criterion_group!(benches, catalog);
criterion_main!(benches);
