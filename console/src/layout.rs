//! The page frame every page shares: a title, the navigation, and one
//! small style sheet inline (no files to serve, nothing to build).

use maud::{DOCTYPE, Markup, html};

const STYLE: &str = r#"
:root { --ink:#1d2330; --muted:#5b6474; --line:#e3e6eb; --bg:#f6f7f9; --card:#fff;
        --accent:#2457d6; --bad:#b42318; --bad-bg:#fdecea; --ok:#067647; --ok-bg:#e7f6ec; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color:var(--ink); background:var(--bg); }
header { background:var(--ink); color:#fff; padding:12px 28px; display:flex; gap:28px;
         align-items:center; }
header b { font-size:16px; letter-spacing:.2px; }
header a { color:#c9d3e6; text-decoration:none; }
header a.here, header a:hover { color:#fff; }
main { padding:24px 28px; max-width:1240px; }
h1 { font-size:20px; margin:0 0 4px; }
p.lead { color:var(--muted); margin:0 0 20px; }
.cards { display:grid; grid-template-columns:repeat(4, 1fr); gap:14px; margin-bottom:22px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 16px; }
.card .n { font-size:28px; font-weight:600; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.4px; }
.card.bad { border-color:#f5c2bd; background:var(--bad-bg); }
.card.bad .n { color:var(--bad); }
table { width:100%; border-collapse:collapse; background:var(--card);
        border:1px solid var(--line); border-radius:8px; overflow:hidden; margin-bottom:22px; }
th, td { text-align:left; padding:8px 12px; border-bottom:1px solid var(--line); vertical-align:top;
         overflow-wrap:break-word; }
tr:has(+ tr.form) td { border-bottom:none; }
tr.form td { padding-top:0; }
table.effects { table-layout:fixed; }
table.effects td { overflow-wrap:anywhere; }
th, .tag { white-space:nowrap; }
th { background:#fafbfc; color:var(--muted); font-weight:600; font-size:12px;
     text-transform:uppercase; letter-spacing:.4px; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
code, .mono { font-family:ui-monospace, "SF Mono", Menlo, monospace; font-size:12.5px; }
.tag { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
       background:#eef1f5; }
.tag.unknown, .tag.needs { background:var(--bad-bg); color:var(--bad); }
.tag.succeeded { background:var(--ok-bg); color:var(--ok); }
form.settle { display:grid; grid-template-columns:120px 1fr 140px 2fr auto auto; gap:8px;
              align-items:center; }
input, select, button { font:inherit; padding:5px 8px; border:1px solid #c8ced8;
                        border-radius:6px; background:#fff; }
button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
form.lookup { display:flex; gap:8px; margin-bottom:18px; }
.note { padding:12px 14px; border-radius:8px; margin-bottom:18px; border:1px solid var(--line);
        background:var(--card); }
.note.bad { background:var(--bad-bg); border-color:#f5c2bd; }
.note.ok { background:var(--ok-bg); border-color:#b7e3c6; }
dl { display:grid; grid-template-columns:180px 1fr; gap:4px 16px; background:var(--card);
     border:1px solid var(--line); border-radius:8px; padding:14px 16px; }
dt { color:var(--muted); }
svg.spark { vertical-align:middle; }
.muted { color:var(--muted); }
.card .n { overflow-wrap:anywhere; }
"#;

/// The pages, for the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Here {
    Overview,
    Effects,
    Lookup,
}

/// A whole page: `title`, and `body` under the navigation.
pub(crate) fn page(title: &str, here: Here, body: Markup) -> Markup {
    let link = |to: Here, href: &str, label: &str| {
        html! { a href=(href) class=[(to == here).then_some("here")] { (label) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · tickets console" }
                style { (maud::PreEscaped(STYLE)) }
            }
            body {
                header {
                    b { "tickets console" }
                    (link(Here::Overview, "/", "Overview"))
                    (link(Here::Effects, "/effects", "Needs a person"))
                    (link(Here::Lookup, "/lookup", "Look up a key"))
                    a href="/metrics" { "/metrics" }
                }
                main { (body) }
            }
        }
    }
}
