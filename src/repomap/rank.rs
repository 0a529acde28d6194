//! Ranking: a petgraph CSR graph of who references what, personalized PageRank over it,
//! and the credit each (definer, identifier) pair earns.
//!
//! The graph is bipartite: file -> identifier (weight from the reference count and the
//! name) and identifier -> every file that defines it. An identifier node only passes its
//! inflow on, within the same iteration, so the file-level PageRank is exactly that of
//! the graph with an edge referencer -> definer per identifier (ARCHITECTURE.md, *The
//! repo map*), but common names (`new`, `len`, defined in thousands of files) cost R + D
//! edges instead of R x D.

use petgraph::csr::Csr;

/// Damping factor.
const DAMPING: f64 = 0.85;
/// Converged when the L1 change of the rank vector is below this times the node count
/// (networkx's criterion, which aider inherits).
const TOLERANCE: f64 = 1e-6;
const MAX_ITERATIONS: usize = 100;

/// Share of a file's rank that its unreferenced definitions split between them: they
/// are listed after the referenced ones of comparable files instead of taking the whole
/// rank of a file that references nothing else (aider's self-edge bug).
const UNREFERENCED_SHARE: f64 = 0.1;

const MENTIONED: f32 = 10.0;
const CHAT_REFERENCER: f32 = 50.0;

/// One file's identifiers as the graph needs them.
pub struct FileIdents<'a> {
    /// Distinct global identifier ids the file defines, sorted.
    pub defines: &'a [u32],
    /// (global identifier id, number of references), sorted by identifier.
    pub refs: &'a [(u32, u32)],
}

impl FileIdents<'_> {
    /// The references to identifiers the file does not define itself (those point at
    /// its own definitions), by walking the two sorted lists together.
    fn external_refs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut defines = self.defines.iter().peekable();
        self.refs.iter().copied().filter(move |&(i, _)| {
            while defines.next_if(|&&d| d < i).is_some() {}
            defines.peek() != Some(&&i)
        })
    }
}

/// The reference graph of the whole repository, rebuilt when tags change.
pub struct Graph {
    n_files: usize,
    /// Graph identifier index -> global identifier id.
    idents: Vec<u32>,
    /// Global identifier id -> graph identifier index, `u32::MAX` when not in the graph.
    node_of: Vec<u32>,
    /// Global identifier id -> number of files that define it.
    def_count: Vec<u32>,
    /// Nodes `0..n_files` are files, `n_files + k` is identifier `idents[k]`.
    csr: Csr<(), f32, petgraph::Directed, u32>,
    /// Per file: how many (referencing file, identifier) edges point at it.
    in_degree: Vec<u32>,
}

/// Stats for `--stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphStats {
    pub identifiers: usize,
    pub edges: usize,
}

impl Graph {
    /// Builds the graph. `names(id)` gives an identifier's text, for the name-based
    /// weights.
    pub fn build<'n>(
        files: &[FileIdents<'_>],
        n_idents: usize,
        names: impl Fn(u32) -> &'n str,
    ) -> Graph {
        let n_files = files.len();
        let mut def_count = vec![0u32; n_idents];
        for f in files {
            for &i in f.defines {
                def_count[i as usize] += 1;
            }
        }
        // An identifier is in the graph when some file that does not define it
        // references it. Nodes are numbered in identifier order, so each file's row
        // comes out sorted.
        let mut linked = vec![false; n_idents];
        for f in files {
            for (i, _) in f.external_refs() {
                linked[i as usize] |= def_count[i as usize] > 0;
            }
        }
        let mut node_of = vec![u32::MAX; n_idents];
        let mut idents = Vec::new();
        for (i, _) in linked.iter().enumerate().filter(|(_, l)| **l) {
            node_of[i] = idents.len() as u32;
            idents.push(i as u32);
        }
        let base: Vec<f32> = idents
            .iter()
            .map(|&i| name_multiplier(names(i)) * definer_multiplier(def_count[i as usize]))
            .collect();

        let mut edges: Vec<(u32, u32, f32)> = Vec::new();
        for (r, f) in files.iter().enumerate() {
            for (i, n) in f.external_refs() {
                let node = node_of[i as usize];
                if node != u32::MAX {
                    let w = (n as f32).sqrt() * base[node as usize];
                    edges.push((r as u32, n_files as u32 + node, w));
                }
            }
        }
        // Identifier rows: a counting sort by node, files in increasing order within.
        let mut offsets = vec![0usize; idents.len() + 1];
        for f in files {
            for &i in f.defines {
                if let Some(&k) = node_of.get(i as usize).filter(|&&k| k != u32::MAX) {
                    offsets[k as usize + 1] += 1;
                }
            }
        }
        for k in 0..idents.len() {
            offsets[k + 1] += offsets[k];
        }
        let first = edges.len();
        edges.resize(first + offsets[idents.len()], (0, 0, 1.0));
        for (d, f) in files.iter().enumerate() {
            for &i in f.defines {
                if let Some(&k) = node_of.get(i as usize).filter(|&&k| k != u32::MAX) {
                    edges[first + offsets[k as usize]] = (n_files as u32 + k, d as u32, 1.0);
                    offsets[k as usize] += 1;
                }
            }
        }
        let mut referencers = vec![0u32; idents.len()];
        for &(_, target, _) in &edges[..first] {
            referencers[target as usize - n_files] += 1;
        }
        let mut in_degree = vec![0u32; n_files];
        for &(ident, definer, _) in &edges[first..] {
            in_degree[definer as usize] += referencers[ident as usize - n_files];
        }
        let csr = Csr::from_sorted_edges(&edges).expect("edges are built sorted");
        Graph {
            n_files,
            idents,
            node_of,
            def_count,
            csr,
            in_degree,
        }
    }

    /// Whether some file defines the identifier.
    pub(crate) fn is_defined(&self, ident: u32) -> bool {
        self.def_count.get(ident as usize).is_some_and(|&n| n > 0)
    }

    /// How many (referencing file, identifier) edges point at `file`.
    pub(crate) fn in_degree(&self, file: u32) -> u32 {
        self.in_degree.get(file as usize).copied().unwrap_or(0)
    }

    pub fn stats(&self) -> GraphStats {
        GraphStats {
            identifiers: self.idents.len(),
            edges: self.csr.edge_count(),
        }
    }

    fn row(&self, node: usize) -> (&[u32], &[f32]) {
        if node < self.csr.node_count() {
            (
                self.csr.neighbors_slice(node as u32),
                self.csr.edges_slice(node as u32),
            )
        } else {
            (&[], &[])
        }
    }

    fn definers(&self, k: usize) -> &[u32] {
        self.row(self.n_files + k).0
    }

    /// Runs personalized PageRank. `chat[f]` marks chat files; `personal[f]` is the
    /// personalization weight of each file (all zero for uniform); `mentioned` lists
    /// global identifier ids mentioned in the chat.
    pub(crate) fn rank(&self, chat: &[bool], personal: &[f64], mentioned: &[u32]) -> Ranking {
        let n = self.n_files;
        let mut ident_mult = vec![1.0f32; self.idents.len()];
        for &i in mentioned {
            if let Some(&k) = self.node_of.get(i as usize)
                && k != u32::MAX
            {
                ident_mult[k as usize] = MENTIONED;
            }
        }
        // Total out-weight of each file: every identifier edge counts once per definer.
        let out_weight: Vec<f64> = (0..n)
            .map(|r| {
                let (targets, weights) = self.row(r);
                let chat_mult = if chat[r] { CHAT_REFERENCER } else { 1.0 };
                targets
                    .iter()
                    .zip(weights)
                    .map(|(&t, &w)| {
                        let k = t as usize - n;
                        (w * ident_mult[k] * chat_mult) as f64 * self.definers(k).len() as f64
                    })
                    .sum()
            })
            .collect();

        let total: f64 = personal.iter().sum();
        let p: Vec<f64> = if total > 0.0 {
            personal.iter().map(|x| x / total).collect()
        } else {
            vec![1.0 / n.max(1) as f64; n]
        };
        let mut ranking = Ranking {
            file_rank: p.clone(),
            flow: vec![0.0; self.idents.len()],
            ident_mult,
            out_weight,
            chat: chat.to_vec(),
            iterations: 0,
        };
        let mut next = vec![0.0; n];
        for iteration in 1..=MAX_ITERATIONS {
            let dangling = ranking.compute_flow(self);
            for (x, &pf) in next.iter_mut().zip(&p) {
                *x = (1.0 - DAMPING) * pf + DAMPING * dangling * pf;
            }
            for (k, &flow) in ranking.flow.iter().enumerate() {
                for &d in self.definers(k) {
                    next[d as usize] += DAMPING * flow;
                }
            }
            let change: f64 = next
                .iter()
                .zip(&ranking.file_rank)
                .map(|(a, b)| (a - b).abs())
                .sum();
            std::mem::swap(&mut next, &mut ranking.file_rank);
            ranking.iterations = iteration;
            if change < TOLERANCE * n as f64 {
                break;
            }
        }
        ranking.compute_flow(self);
        ranking
    }

    /// The ranked (definer, identifier) pairs: every pair with referencers gets the
    /// rank its referencers send it; pairs nobody else references split a small share
    /// of their file's rank. `defines[f]` lists file `f`'s distinct definitions.
    pub(crate) fn credits(&self, ranking: &Ranking, defines: &[&[u32]]) -> Vec<Credit> {
        let mut credits = Vec::new();
        for (f, idents) in defines.iter().enumerate() {
            if ranking.chat[f] || idents.is_empty() {
                continue;
            }
            let unreferenced_each = ranking.file_rank[f] * UNREFERENCED_SHARE / idents.len() as f64;
            for &i in *idents {
                let k = self.node_of[i as usize];
                let score = if k == u32::MAX {
                    unreferenced_each
                } else {
                    ranking.flow[k as usize]
                };
                credits.push(Credit {
                    file: f as u32,
                    ident: i,
                    score,
                });
            }
        }
        credits
    }

    /// The edges into `definer` that carry the most rank: (identifier, referencer,
    /// rank carried), best first.
    pub fn why(&self, ranking: &Ranking, definer: u32, limit: usize) -> Vec<(u32, u32, f64)> {
        let n = self.n_files;
        let mut edges = Vec::new();
        for r in 0..n {
            if ranking.out_weight[r] == 0.0 {
                continue;
            }
            let (targets, weights) = self.row(r);
            for (&t, &w) in targets.iter().zip(weights) {
                let k = t as usize - n;
                if self.definers(k).binary_search(&definer).is_ok() {
                    let carried = ranking.share(r, k, w);
                    edges.push((self.idents[k], r as u32, carried));
                }
            }
        }
        edges.sort_by(|a, b| b.2.total_cmp(&a.2));
        edges.truncate(limit);
        edges
    }
}

/// The result of one PageRank run.
pub struct Ranking {
    /// PageRank of each file (sums to 1).
    pub file_rank: Vec<f64>,
    /// Rank each graph identifier sends to each of its definers.
    flow: Vec<f64>,
    ident_mult: Vec<f32>,
    out_weight: Vec<f64>,
    chat: Vec<bool>,
    pub iterations: usize,
}

impl Ranking {
    /// Rank file `r` sends along its edge to identifier `k` (per definer).
    fn share(&self, r: usize, k: usize, w: f32) -> f64 {
        let chat_mult = if self.chat[r] { CHAT_REFERENCER } else { 1.0 };
        self.file_rank[r] * (w * self.ident_mult[k] * chat_mult) as f64 / self.out_weight[r]
    }

    /// Recomputes every identifier's per-definer flow from the current file ranks and
    /// returns the rank held by dangling files (no out-edges).
    fn compute_flow(&mut self, graph: &Graph) -> f64 {
        self.flow.iter_mut().for_each(|x| *x = 0.0);
        let mut dangling = 0.0;
        for r in 0..graph.n_files {
            if self.out_weight[r] == 0.0 {
                dangling += self.file_rank[r];
                continue;
            }
            let (targets, weights) = graph.row(r);
            for (&t, &w) in targets.iter().zip(weights) {
                let k = t as usize - graph.n_files;
                self.flow[k] += self.share(r, k, w);
            }
        }
        dangling
    }
}

/// The rank one (definer, identifier) pair earned.
#[derive(Debug, Clone, Copy)]
pub struct Credit {
    pub file: u32,
    pub ident: u32,
    pub score: f64,
}

/// x10 for distinctive names (snake, kebab or camel case, 8+ characters), x0.1 for
/// private-looking names starting with `_`.
fn name_multiplier(name: &str) -> f32 {
    let mut m = 1.0;
    let distinctive = name.chars().count() >= 8
        && (name.contains('_')
            || name.contains('-')
            || (name.chars().any(|c| c.is_uppercase()) && name.chars().any(|c| c.is_lowercase())));
    if distinctive {
        m *= 10.0;
    }
    if name.starts_with('_') {
        m *= 0.1;
    }
    m
}

/// x0.1 for names defined in more than five files: too generic to say much.
fn definer_multiplier(definers: u32) -> f32 {
    if definers > 5 { 0.1 } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_weights_follow_the_design() {
        assert_eq!(name_multiplier("short"), 1.0);
        assert_eq!(name_multiplier("parse_arguments"), 10.0);
        assert_eq!(name_multiplier("TokenCounter"), 10.0);
        assert_eq!(name_multiplier("kebab-case-name"), 10.0);
        assert_eq!(name_multiplier("ALLCAPSNAME"), 1.0);
        assert!((name_multiplier("_private_helper") - 1.0).abs() < 1e-6);
        assert!((name_multiplier("_x") - 0.1).abs() < 1e-6);
        assert_eq!(definer_multiplier(5), 1.0);
        assert_eq!(definer_multiplier(6), 0.1);
    }

    /// Three files: 0 and 1 both reference `hub` defined in 2; 2 references `leaf`
    /// defined in 0.
    /// Per file: defined identifiers, and (identifier, reference count) pairs.
    type Files = (Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

    fn small() -> Files {
        // identifiers: 0 = hub, 1 = leaf, 2 = lonely (defined in 1, never referenced)
        let defines = vec![vec![1], vec![2], vec![0]];
        let references = vec![vec![(0, 3)], vec![(0, 1)], vec![(1, 1)]];
        (defines, references)
    }

    fn graph(defines: &[Vec<u32>], references: &[Vec<(u32, u32)>]) -> Graph {
        let files: Vec<FileIdents> = defines
            .iter()
            .zip(references)
            .map(|(d, r)| FileIdents {
                defines: d,
                refs: r,
            })
            .collect();
        Graph::build(&files, 3, |i| ["hub", "leaf", "lonely"][i as usize])
    }

    #[test]
    fn rank_sums_to_one_and_favours_the_referenced_file() {
        let (d, r) = small();
        let g = graph(&d, &r);
        assert_eq!(g.stats().identifiers, 2);
        // `hub` (in file 2) is referenced by 0 and 1, `leaf` (in file 0) by 2.
        assert_eq!([g.in_degree(0), g.in_degree(1), g.in_degree(2)], [1, 0, 2]);
        let ranking = g.rank(&[false; 3], &[0.0; 3], &[]);
        let sum: f64 = ranking.file_rank.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        assert!(ranking.file_rank[2] > ranking.file_rank[1]);
        assert!(ranking.iterations > 1);
    }

    #[test]
    fn unreferenced_definitions_get_only_a_small_share() {
        let (d, r) = small();
        let g = graph(&d, &r);
        let ranking = g.rank(&[false; 3], &[0.0; 3], &[]);
        let defines: Vec<&[u32]> = d.iter().map(Vec::as_slice).collect();
        let credits = g.credits(&ranking, &defines);
        let lonely = credits.iter().find(|c| c.ident == 2).unwrap();
        assert!(lonely.score <= ranking.file_rank[1] * UNREFERENCED_SHARE + 1e-12);
        let hub = credits.iter().find(|c| c.ident == 0).unwrap();
        assert!(hub.score > lonely.score);
    }

    #[test]
    fn personalization_moves_rank_and_why_names_the_edges() {
        let (d, r) = small();
        let g = graph(&d, &r);
        let plain = g.rank(&[false; 3], &[0.0; 3], &[]);
        let personal = g.rank(&[false, true, false], &[0.0, 1.0, 0.0], &[]);
        assert!(personal.file_rank[1] > plain.file_rank[1]);
        let why = g.why(&personal, 2, 5);
        assert_eq!(why.len(), 2);
        assert!(why.iter().all(|e| e.0 == 0));
        assert!(why[0].2 >= why[1].2);
    }
}
