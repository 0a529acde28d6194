//! The repo map: the `map` and `map_why` events, and `tern map --json`.

use serde::Serialize;

use crate::engine::protocol as p;

/// The map as the model sees it, with the ranked files as `[path, score]` pairs.
#[derive(Serialize)]
pub struct Map<'a> {
    tokens: usize,
    budget: usize,
    ranked: &'a [(String, f64)],
    text: &'a str,
}

impl<'a> From<&'a p::MapView> for Map<'a> {
    fn from(m: &'a p::MapView) -> Self {
        Map {
            tokens: m.tokens,
            budget: m.budget,
            ranked: &m.ranked,
            text: &m.text,
        }
    }
}

/// Why a file is in the map: `ident`, defined there, is referenced from `from`.
#[derive(Serialize)]
pub struct Edge<'a> {
    ident: &'a str,
    from: &'a str,
    weight: f64,
}

impl<'a> From<&'a p::MapEdge> for Edge<'a> {
    fn from(e: &'a p::MapEdge) -> Self {
        Edge {
            ident: &e.ident,
            from: &e.from,
            weight: e.weight,
        }
    }
}

/// `tern map --json`: the map, its counts, and every rankable file with its score.
#[derive(Serialize)]
pub struct MapFile<'a> {
    pub text: &'a str,
    pub tokens: usize,
    pub budget: usize,
    pub encoding: &'static str,
    /// Counted with a stand-in tokenizer.
    pub estimate: bool,
    pub files: Vec<Ranked<'a>>,
}

#[derive(Serialize)]
pub struct Ranked<'a> {
    pub path: &'a str,
    pub score: f64,
}
