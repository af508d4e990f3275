//! `cargo xtask layers`: the library's module graph, checked.
//!
//! Every file of the three library crates ([`SOURCES`]: from each
//! `lib.rs`, following `mod` items; test-only code left out) is a node. The
//! crates' top-level modules share one namespace: the upper crates
//! re-export the lower ones' modules, so `crate::skin` names the same module
//! everywhere, and a path through another crate's name
//! (`plasticine_core::skin`) reads as `crate::skin`. A file depends on the module whose item it
//! names: in a `use` tree, or in a path that starts with `crate`, `super`,
//! `self` or one of its own submodules. A name a module re-exports
//! (`pub use`) is followed to the module that defines it, so a facade
//! `mod.rs` is not itself a dependency.
//!
//! Three rules:
//! - no cycles between files (an edge inside a strongly connected
//!   component is a violation);
//! - a top-level module imports only from the tiers below its own
//!   ([`TIERS`]);
//! - no source file is longer than [`MAX_FILE_LINES`]: past that, one
//!   person no longer holds it in mind, and it is split along a seam.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The library crates' source folders, lowest first.
pub const SOURCES: &[&str] = &[
    "crates/plasticine-core/src",
    "crates/plasticine-app/src",
    "src",
];

/// The crate names whose paths read as `crate::` (see the module docs).
const CRATE_NAMES: &[&str] = &["crate", "plasticine_core", "plasticine_app", "plasticine"];

/// The layers, top to bottom: each top-level module may import only from
/// the tiers below its own. `cli` is the command line with its benchmarks
/// (the `plasticine` crate); `app`, `fem_gpu`, `xr`, `render`, `view` and
/// `gpu` are `plasticine-app`, the rest `plasticine-core`. The crates add a
/// rule the order alone does not: the core imports nothing of the app crate
/// (no GPU, window or headset), which the compiler keeps.
pub const TIERS: &[&[&str]] = &[
    &["cli"],
    &["app"],
    &["fem_gpu"],
    &["samples"],
    &["tools", "bake"],
    &["skin"],
    &["modal", "blendshape"],
    &["fem"],
    &["contact"],
    &["xr"],
    &["render", "view"],
    &["io"],
    &["kinematics", "anim", "snapshot"],
    &["character"],
    &["shape", "input", "gpu", "skin_mesh", "morph"],
];

/// One source file: its module path and what it defines and re-exports.
#[derive(Default, Debug)]
struct Module {
    file: PathBuf,
    /// Submodules declared in it (`mod x;` or inline, not test-only).
    children: BTreeSet<String>,
    /// Items it defines (functions, types, constants, inline modules…).
    items: BTreeSet<String>,
    /// `pub use` of a single name: the name and the absolute path it names.
    reexports: BTreeMap<String, Vec<String>>,
    /// `pub use path::*`: the modules whose names it re-exports.
    globs: Vec<Vec<String>>,
    /// Imported paths (absolute), with the line they are named on.
    uses: Vec<(Vec<String>, usize)>,
}

/// Whether `attrs` hold `#[cfg(test)]` (test-only code is not a layer).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The public (crate-visible) re-export visibility: `pub` or `pub(crate)`.
fn is_reexport(vis: &syn::Visibility) -> bool {
    !matches!(vis, syn::Visibility::Inherited)
}

/// Everything the parser found, by module path.
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
}

impl Crate {
    fn load(sources: &[PathBuf]) -> Result<Self, String> {
        let mut c = Crate {
            modules: BTreeMap::new(),
        };
        for src in sources {
            c.load_file(src.join("lib.rs"), src.clone(), Vec::new())?;
        }
        Ok(c)
    }

    /// Parses the file of module `path`, whose submodules live in `dir`.
    fn load_file(&mut self, file: PathBuf, dir: PathBuf, path: Vec<String>) -> Result<(), String> {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| {
            format!(
                "{}:{}: cannot parse: {e}",
                file.display(),
                e.span().start().line
            )
        })?;
        let mut module = Module {
            file: file.clone(),
            ..Module::default()
        };
        let mut submodules = Vec::new();
        collect_items(&ast.items, &path, &mut module, &mut submodules);
        // The crates' roots merge into one (see the module docs); a crate
        // root re-exporting a lower crate's module is not a re-export of
        // its own.
        match self.modules.get_mut(&path) {
            Some(root) if path.is_empty() => {
                root.children.extend(module.children);
                root.items.extend(module.items);
                root.uses.extend(module.uses);
            }
            _ => {
                self.modules.insert(path.clone(), module);
            }
        }
        for name in submodules {
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(&name).join("mod.rs");
            let (f, d) = if flat.exists() {
                (flat, dir.join(&name))
            } else if nested.exists() {
                (nested, dir.join(&name))
            } else {
                return Err(format!(
                    "{}: module `{name}` has no file ({} or {})",
                    file.display(),
                    flat.display(),
                    nested.display()
                ));
            };
            let mut child = path.clone();
            child.push(name);
            self.load_file(f, d, child)?;
        }
        Ok(())
    }

    /// The module that defines what the absolute `path` names: the longest
    /// prefix that is a module, followed through re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Vec<String> {
        let mut k = path.len();
        while k > 0 && !self.modules.contains_key(&path[..k]) {
            k -= 1;
        }
        let module = path[..k].to_vec();
        let Some(name) = path.get(k) else {
            return module;
        };
        if depth > 16 {
            return module;
        }
        let m = &self.modules[&module];
        if m.items.contains(name) {
            return module;
        }
        if let Some(target) = m.reexports.get(name) {
            let mut full = target.clone();
            full.extend_from_slice(&path[k + 1..]);
            return self.resolve(&full, depth + 1);
        }
        for glob in &m.globs {
            let mut full = glob.clone();
            full.extend_from_slice(&path[k..]);
            let found = self.resolve(&full, depth + 1);
            if found != *glob
                || self
                    .modules
                    .get(glob)
                    .is_some_and(|g| g.items.contains(name))
            {
                return found;
            }
        }
        module
    }
}

/// Absolute path of a `use`/path prefix seen in module `here`.
fn absolute(here: &[String], children: &BTreeSet<String>, segs: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?;
    let mut out: Vec<String>;
    let rest;
    match first.as_str() {
        name if CRATE_NAMES.contains(&name) => {
            out = Vec::new();
            rest = &segs[1..];
        }
        "self" => {
            out = here.to_vec();
            rest = &segs[1..];
        }
        "super" => {
            out = here.to_vec();
            let mut i = 0;
            while segs.get(i).is_some_and(|s| s == "super") {
                out.pop()?;
                i += 1;
            }
            rest = &segs[i..];
        }
        name if children.contains(name) => {
            out = here.to_vec();
            rest = segs;
        }
        _ => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// Flattens a use tree into (path, is_glob) leaves.
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut p = prefix.clone();
            if name != "self" {
                p.push(name.clone());
            }
            let alias = if name == "self" {
                prefix.last().cloned()
            } else {
                Some(name)
            };
            out.push((p, alias, false));
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            if r.ident != "self" {
                p.push(r.ident.to_string());
            }
            out.push((p, Some(r.rename.to_string()), false));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None, true)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Collects the items, re-exports and imports of one module's item list
/// (inline modules are folded into the file that holds them).
fn collect_items(
    items: &[syn::Item],
    path: &[String],
    m: &mut Module,
    submodules: &mut Vec<String>,
) {
    // Children first: a path may start with a submodule declared below it.
    for item in items {
        if let syn::Item::Mod(md) = item
            && !is_test_only(&md.attrs)
        {
            m.children.insert(md.ident.to_string());
        }
    }
    for item in items {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Union(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => &[],
        };
        if is_test_only(attrs) {
            continue;
        }
        let name = match item {
            syn::Item::Const(i) => Some(i.ident.to_string()),
            syn::Item::Enum(i) => Some(i.ident.to_string()),
            syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
            syn::Item::Mod(i) => Some(i.ident.to_string()),
            syn::Item::Static(i) => Some(i.ident.to_string()),
            syn::Item::Struct(i) => Some(i.ident.to_string()),
            syn::Item::Trait(i) => Some(i.ident.to_string()),
            syn::Item::Type(i) => Some(i.ident.to_string()),
            syn::Item::Union(i) => Some(i.ident.to_string()),
            syn::Item::Macro(i) => i.ident.as_ref().map(ToString::to_string),
            _ => None,
        };
        match item {
            syn::Item::Mod(md) => match &md.content {
                None => submodules.push(md.ident.to_string()),
                Some((_, inner)) => {
                    // An inline module is part of this file: its items and
                    // imports count here, its paths relative to itself.
                    let mut inner_path = path.to_vec();
                    inner_path.push(md.ident.to_string());
                    let mut sub = Module::default();
                    let mut nested = Vec::new();
                    collect_items(inner, &inner_path, &mut sub, &mut nested);
                    m.uses.extend(sub.uses);
                }
            },
            syn::Item::Use(u) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                let line = u.span().start().line;
                for (segs, alias, glob) in leaves {
                    let Some(abs) = absolute(path, &m.children, &segs) else {
                        continue;
                    };
                    // A re-export of one's own descendant is a facade, not
                    // a dependency; anything else imported is one.
                    let own = abs.len() > path.len() && abs.starts_with(path);
                    if is_reexport(&u.vis) {
                        if glob {
                            m.globs.push(abs.clone());
                        } else if let Some(a) = &alias {
                            m.reexports.insert(a.clone(), abs.clone());
                        }
                        if own {
                            continue;
                        }
                    }
                    m.uses.push((abs, line));
                }
            }
            _ => {
                let mut v = PathVisitor {
                    here: path,
                    children: &m.children,
                    found: Vec::new(),
                };
                v.visit_item(item);
                m.uses.extend(v.found);
            }
        }
        if let Some(n) = name {
            m.items.insert(n);
        }
    }
}

/// Paths in code (types, expressions, patterns) that name a module of
/// this crate. Test-only functions and modules inside are skipped.
struct PathVisitor<'a> {
    here: &'a [String],
    children: &'a BTreeSet<String>,
    found: Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            if let Some(abs) = absolute(self.here, self.children, &segs) {
                self.found.push((abs, p.span().start().line));
            }
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A `use` inside a function body.
        let mut leaves = Vec::new();
        use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
        for (segs, _, _) in leaves {
            if let Some(abs) = absolute(self.here, self.children, &segs) {
                self.found.push((abs, u.span().start().line));
            }
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

/// A module path as its file reads, relative to the repository.
fn file_of(c: &Crate, module: &[String]) -> String {
    c.modules[module]
        .file
        .strip_prefix(crate::repo_root())
        .unwrap_or(&c.modules[module].file)
        .display()
        .to_string()
}

fn tier(top: &str) -> Option<usize> {
    TIERS.iter().position(|t| t.contains(&top))
}

/// The violations of the rules, one stable line each, with where each was
/// first seen (for the message).
fn violations(c: &Crate) -> BTreeMap<String, String> {
    // File-level edges, with a witness location.
    let mut edges: BTreeMap<(Vec<String>, Vec<String>), usize> = BTreeMap::new();
    for (from, m) in &c.modules {
        for (path, line) in &m.uses {
            let to = c.resolve(path, 0);
            if to != *from && !to.is_empty() {
                edges.entry((from.clone(), to)).or_insert(*line);
            }
        }
    }
    let mut out = BTreeMap::new();
    // Layer order between top-level modules.
    for ((from, to), line) in &edges {
        let (Some(a), Some(b)) = (from.first(), to.first()) else {
            continue;
        };
        if a == b {
            continue;
        }
        let at = format!("{}:{line}", file_of(c, from));
        match (tier(a), tier(b)) {
            (Some(ta), Some(tb)) if tb > ta => {}
            (Some(_), Some(_)) => {
                out.insert(
                    format!(
                        "order: {} -> {} ({a} may not import {b})",
                        file_of(c, from),
                        file_of(c, to)
                    ),
                    at,
                );
            }
            (None, _) => {
                out.insert(format!("order: module {a} is in no tier"), at);
            }
            (_, None) => {
                out.insert(format!("order: module {b} is in no tier"), at);
            }
        }
    }
    // Cycles between files: every edge inside a strongly connected component.
    let nodes: Vec<&Vec<String>> = c.modules.keys().collect();
    let index: HashMap<&Vec<String>, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (from, to) in edges.keys() {
        adj[index[from]].push(index[to]);
    }
    let comp = strongly_connected(&adj);
    for ((from, to), line) in &edges {
        let (a, b) = (index[from], index[to]);
        if comp[a] == comp[b] {
            out.insert(
                format!("cycle: {} -> {}", file_of(c, from), file_of(c, to)),
                format!("{}:{line}", file_of(c, from)),
            );
        }
    }
    out
}

/// Tarjan's strongly connected components: the component of each node.
fn strongly_connected(adj: &[Vec<usize>]) -> Vec<usize> {
    struct State<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        comp: Vec<usize>,
        comps: usize,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for k in 0..s.adj[v].len() {
            let w = s.adj[v][k];
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                s.comp[w] = s.comps;
                if w == v {
                    break;
                }
            }
            s.comps += 1;
        }
    }
    let n = adj.len();
    let mut s = State {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        comp: vec![0; n],
        comps: 0,
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.comp
}

/// The most lines a source file may have.
pub const MAX_FILE_LINES: usize = 1000;

/// The `.rs` files under `dir` longer than [`MAX_FILE_LINES`], with their
/// line counts, sorted by path.
pub fn long_files(dir: &Path) -> Result<Vec<(PathBuf, usize)>, String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| format!("cannot list {}: {e}", d.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("cannot list {}: {e}", d.display()))?
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let lines = text.lines().count();
                if lines > MAX_FILE_LINES {
                    found.push((path, lines));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `cargo xtask layers`.
pub fn run() -> Result<(), String> {
    let root = crate::repo_root();
    let sources: Vec<PathBuf> = SOURCES.iter().map(|s| root.join(s)).collect();
    let c = Crate::load(&sources)?;
    let found = violations(&c);
    let mut long = Vec::new();
    for src in &sources {
        long.extend(long_files(src)?);
    }
    println!(
        "layers: {} modules, {} violations of the layer rules, {} files over {MAX_FILE_LINES} lines",
        c.modules.len(),
        found.len(),
        long.len()
    );
    let mut lines: Vec<String> = found
        .iter()
        .map(|(l, at)| format!("{l}   (at {at})"))
        .collect();
    lines.extend(long.iter().map(|(path, n)| {
        let shown = path.strip_prefix(&root).unwrap_or(path);
        format!("{} has {n} lines: split it along a seam", shown.display())
    }));
    if lines.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the layer rules (no import cycle between files; each top-level module imports \
         only from the tiers below its own; no file over {MAX_FILE_LINES} lines; see \
         xtask/src/layers.rs):\n  {}",
        lines.join("\n  ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn only_files_over_the_limit_are_long() {
        let dir = std::env::temp_dir().join(format!("xtask-long-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        let text = |n: usize| "x\n".repeat(n);
        std::fs::write(dir.join("ok.rs"), text(MAX_FILE_LINES)).unwrap();
        std::fs::write(dir.join("inner/long.rs"), text(MAX_FILE_LINES + 1)).unwrap();
        std::fs::write(dir.join("notes.txt"), text(2 * MAX_FILE_LINES)).unwrap();
        let long = long_files(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(long, vec![(dir.join("inner/long.rs"), MAX_FILE_LINES + 1)]);
    }

    #[test]
    fn a_cycle_is_one_component_and_a_chain_is_not() {
        // 0 → 1 → 2 → 0 is one component; 3 → 0 stands alone.
        let comp = strongly_connected(&[vec![1], vec![2], vec![0], vec![0]]);
        assert_eq!(comp[0], comp[1]);
        assert_eq!(comp[1], comp[2]);
        assert_ne!(comp[3], comp[0]);
    }

    #[test]
    fn relative_paths_become_absolute() {
        let here = s(&["skin", "stepper"]);
        let kids = BTreeSet::from(["inner".to_string()]);
        assert_eq!(
            absolute(&here, &kids, &s(&["super", "settings", "X"])),
            Some(s(&["skin", "settings", "X"]))
        );
        assert_eq!(
            absolute(&here, &kids, &s(&["crate", "fem", "Y"])),
            Some(s(&["fem", "Y"]))
        );
        assert_eq!(
            absolute(&here, &kids, &s(&["inner", "Z"])),
            Some(s(&["skin", "stepper", "inner", "Z"]))
        );
        assert_eq!(absolute(&here, &kids, &s(&["glam", "Vec3"])), None);
    }

    #[test]
    fn a_reexported_name_resolves_to_where_it_is_defined() {
        let src = |t: &str| syn::parse_file(t).unwrap().items;
        let mut c = Crate {
            modules: BTreeMap::new(),
        };
        let mut load = |path: &[&str], text: &str| {
            let mut m = Module::default();
            collect_items(&src(text), &s(path), &mut m, &mut Vec::new());
            c.modules.insert(s(path), m);
        };
        load(&[], "pub mod skin;");
        load(
            &["skin"],
            "mod settings; mod sim; pub use settings::Settings; pub use sim::*;",
        );
        load(&["skin", "settings"], "pub struct Settings;");
        load(
            &["skin", "sim"],
            "pub struct Simulation; use super::Settings;",
        );
        assert_eq!(
            c.resolve(&s(&["skin", "Settings"]), 0),
            s(&["skin", "settings"])
        );
        assert_eq!(
            c.resolve(&s(&["skin", "Simulation"]), 0),
            s(&["skin", "sim"])
        );
        assert_eq!(
            c.resolve(&s(&["skin", "sim", "Simulation"]), 0),
            s(&["skin", "sim"])
        );
        // The facade's re-exports are not its dependencies; sim's import is.
        assert!(c.modules[&s(&["skin"])].uses.is_empty());
        assert_eq!(
            c.modules[&s(&["skin", "sim"])].uses[0].0,
            s(&["skin", "Settings"])
        );
    }
}
