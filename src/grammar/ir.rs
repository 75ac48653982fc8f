//! The one grammar representation every protocol builds and both text dialects render:
//! rules and terminals over literals, character sets, sequences, alternatives and
//! repetition, plus *avoiding text* (any text holding none of some patterns), the one
//! construct that free text between markers needs.
//!
//! Lark (as llguidance reads it) gets terminals as regular expressions, with avoiding
//! text written with llguidance's `&` and `~` operators; GBNF (llama.cpp) gets every
//! definition as a rule, with avoiding text written out as the rules of a small
//! deterministic automaton. Both describe the same language.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// A set of characters: a union of inclusive ranges, or everything outside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CharSet {
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl CharSet {
    /// The characters of `chars`.
    pub(crate) fn of(chars: &str) -> Self {
        CharSet { ranges: chars.chars().map(|c| (c, c)).collect(), negated: false }.normalized()
    }

    /// The characters from `lo` to `hi`.
    pub(crate) fn range(lo: char, hi: char) -> Self {
        CharSet { ranges: vec![(lo, hi)], negated: false }
    }

    /// The union of `ranges`.
    pub(crate) fn ranges(ranges: &[(char, char)]) -> Self {
        CharSet { ranges: ranges.to_vec(), negated: false }.normalized()
    }

    /// Every character but those of `self`.
    pub(crate) fn not(mut self) -> Self {
        self.negated = !self.negated;
        self
    }

    /// `chars`, each in both ASCII cases.
    pub(crate) fn any_case(c: char) -> Self {
        CharSet::of(&format!("{}{}", c.to_ascii_lowercase(), c.to_ascii_uppercase()))
    }

    /// ASCII white space as the reasoning rule reads it (`\s` of ASCII).
    pub(crate) fn ascii_space() -> Self {
        CharSet::of(" \t\n\r\u{0B}\u{0C}")
    }

    /// Unicode `White_Space`.
    pub(crate) fn unicode_space() -> Self {
        CharSet::ranges(&[
            ('\u{09}', '\u{0D}'),
            (' ', ' '),
            ('\u{85}', '\u{85}'),
            ('\u{A0}', '\u{A0}'),
            ('\u{1680}', '\u{1680}'),
            ('\u{2000}', '\u{200A}'),
            ('\u{2028}', '\u{2029}'),
            ('\u{202F}', '\u{202F}'),
            ('\u{205F}', '\u{205F}'),
            ('\u{3000}', '\u{3000}'),
        ])
    }

    fn normalized(mut self) -> Self {
        self.ranges.sort();
        let mut out: Vec<(char, char)> = Vec::with_capacity(self.ranges.len());
        for (lo, hi) in self.ranges {
            match out.last_mut() {
                Some(last) if (lo as u32) <= (last.1 as u32).saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        self.ranges = out;
        self
    }

    /// The ranges of a positive set.
    pub(crate) fn ranges_of(&self) -> Vec<(char, char)> {
        self.ranges.clone()
    }

    pub(crate) fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }

    fn lark(&self) -> String {
        let mut out = String::from(if self.negated { "[^" } else { "[" });
        for &(lo, hi) in &self.ranges {
            regex_char(&mut out, lo);
            if hi != lo {
                out.push('-');
                regex_char(&mut out, hi);
            }
        }
        out.push(']');
        out
    }

    fn gbnf(&self) -> String {
        let mut out = String::from(if self.negated { "[^" } else { "[" });
        for &(lo, hi) in &self.ranges {
            gbnf_class_char(&mut out, lo);
            if hi != lo {
                out.push('-');
                gbnf_class_char(&mut out, hi);
            }
        }
        out.push(']');
        out
    }
}

/// One position of a [`Pattern`]: a character of a set, once or any number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    set: CharSet,
    star: bool,
}

/// Something free text must not hold: a sequence of pieces, anywhere in the text, or
/// only at its start or its end; in all free text, or only in the text right before a
/// call ([`Pattern::before_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    pieces: Vec<Piece>,
    at_start: bool,
    at_end: bool,
    before_call: bool,
}

impl Pattern {
    /// The exact text `text`.
    pub(crate) fn text(text: &str) -> Self {
        Pattern::new().then_text(text)
    }

    /// The empty pattern, to extend.
    pub(crate) fn new() -> Self {
        Pattern { pieces: Vec::new(), at_start: false, at_end: false, before_call: false }
    }

    /// Then `text`, exactly.
    pub(crate) fn then_text(mut self, text: &str) -> Self {
        self.pieces.extend(text.chars().map(|c| Piece { set: CharSet::of(&c.to_string()), star: false }));
        self
    }

    /// Then `text` in any ASCII case.
    pub(crate) fn then_any_case(mut self, text: &str) -> Self {
        self.pieces.extend(text.chars().map(|c| Piece { set: CharSet::any_case(c), star: false }));
        self
    }

    /// Then one character of `set`.
    pub(crate) fn then(mut self, set: CharSet) -> Self {
        self.pieces.push(Piece { set, star: false });
        self
    }

    /// Then any number of characters of `set`.
    pub(crate) fn then_any(mut self, set: CharSet) -> Self {
        self.pieces.push(Piece { set, star: true });
        self
    }

    /// What the text of a value its reader trims may not hold: white space at either
    /// end (it would be dropped), nor any of `markup`.
    pub(crate) fn trimmed_text(markup: &[&str]) -> Vec<Pattern> {
        let mut patterns = vec![
            Pattern::new().then(CharSet::unicode_space()).at_start(),
            Pattern::new().then(CharSet::unicode_space()).at_end(),
        ];
        patterns.extend(markup.iter().map(|m| Pattern::text(m)));
        patterns
    }

    /// Only where the text starts.
    pub(crate) fn at_start(mut self) -> Self {
        self.at_start = true;
        self
    }

    /// Only where the text ends.
    pub(crate) fn at_end(mut self) -> Self {
        self.at_end = true;
        self
    }

    /// Only in the text right before a call's opening markup, not in other free text
    /// (xLAM's bare array is a call only at the start of a reply: the text before it
    /// holds nothing but blanks, while text elsewhere is free).
    pub(crate) fn before_call(mut self) -> Self {
        self.before_call = true;
        self
    }

    /// Whether it holds only for the text right before a call.
    pub(crate) fn is_before_call(&self) -> bool {
        self.before_call
    }

    fn lark(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            out.push_str(&piece.set.lark());
            if piece.star {
                out.push('*');
            }
        }
        out
    }
}

/// A grammar expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// This text, exactly.
    Lit(String),
    /// This text, exactly, written in GBNF one character at a time
    /// ([`Expr::spelled`]).
    Spelled(String),
    /// One character of the set.
    Set(CharSet),
    /// The definition of that name.
    Ref(String),
    /// Each in turn.
    Seq(Vec<Expr>),
    /// One of them.
    Alt(Vec<Expr>),
    /// From `min` to `max` (unbounded: `None`) times.
    Rep(Box<Expr>, u32, Option<u32>),
    /// Any text (valid UTF-8) that holds none of the patterns, of a bounded length. Only
    /// as the whole body of a terminal ([`Builder::avoiding`]).
    Avoid(AvoidText),
    /// The texts of `inner` (a terminal) that each regular expression (Lark syntax, matched
    /// against the whole text) also matches: a schema's `pattern`. Only as the whole body
    /// of a terminal ([`Builder::matching`]). GBNF, which has no intersection, writes
    /// `inner` alone and the grammar carries `note`.
    Matching { inner: Box<Expr>, regexes: Vec<String>, note: String },
}

/// Free text: any text holding none of `patterns`, of `min` to `max` characters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AvoidText {
    pub patterns: Vec<Pattern>,
    pub min: u32,
    pub max: Option<u32>,
    /// Written as guarded characters (see [`Guard`]) at any length: for text a regular
    /// expression narrows further, which an engine intersects cheaply with a guard and
    /// at great cost with the exact "holds none of the patterns".
    pub guarded: bool,
}

impl AvoidText {
    fn bounded(&self) -> bool {
        self.min > 0 || self.max.is_some()
    }

    /// How a bounded text is written as a count of guarded characters (one regular
    /// expression), when it can be: see [`Guard`].
    fn guard(&self) -> Option<(Guard, Option<u32>)> {
        if self.guarded {
            return Some((Guard::new(&self.patterns)?, self.max));
        }
        let max = self.max.filter(|&max| max as usize <= BOUNDED_TEXT_RULES)?;
        Some((Guard::new(&self.patterns)?, Some(max)))
    }

    /// Whether it is one lexeme: unbounded, or bounded and guarded.
    fn regular(&self) -> bool {
        !self.bounded() || self.guard().is_some()
    }
}

impl Expr {
    /// The literal `text`.
    pub(crate) fn lit(text: impl Into<String>) -> Expr {
        Expr::Lit(text.into())
    }

    /// Each of `items` in turn (flattened; the empty sequence is the empty text).
    pub(crate) fn seq(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut out = Vec::new();
        for item in items {
            match item {
                Expr::Seq(inner) => out.extend(inner),
                Expr::Lit(text) if text.is_empty() => {}
                other => out.push(other),
            }
        }
        // Adjacent literals merge into one.
        let mut merged: Vec<Expr> = Vec::with_capacity(out.len());
        for item in out {
            match (merged.last_mut(), item) {
                (Some(Expr::Lit(last)), Expr::Lit(next)) => last.push_str(&next),
                (_, item) => merged.push(item),
            }
        }
        if merged.len() == 1 { merged.pop().unwrap_or(Expr::Lit(String::new())) } else { Expr::Seq(merged) }
    }

    /// The literal `text`, one character at a time: the same text, but GBNF writes each
    /// character as a literal of its own (for a literal where free text may stand too).
    pub(crate) fn spelled(text: &str) -> Expr {
        Expr::Spelled(text.to_string())
    }

    /// One of `items` (a single item is itself).
    pub(crate) fn alt(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut out: Vec<Expr> = Vec::new();
        for item in items {
            match item {
                Expr::Alt(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        if out.len() == 1 { out.pop().unwrap_or(Expr::Lit(String::new())) } else { Expr::Alt(out) }
    }

    /// `self`, or nothing.
    pub(crate) fn opt(self) -> Expr {
        Expr::Rep(Box::new(self), 0, Some(1))
    }

    /// `self` any number of times.
    pub(crate) fn star(self) -> Expr {
        Expr::Rep(Box::new(self), 0, None)
    }

    /// `self` from `min` to `max` times (at most 0 times: the empty text).
    pub(crate) fn times(self, min: u32, max: Option<u32>) -> Expr {
        match max {
            Some(0) => Expr::lit(""),
            Some(1) if min == 1 => self,
            _ => Expr::Rep(Box::new(self), min, max),
        }
    }

    /// One character of `set`.
    pub(crate) fn set(set: CharSet) -> Expr {
        Expr::Set(set)
    }
}

/// A named definition: a rule (context-free) or a terminal (regular: literals, sets and
/// other terminals only).
#[derive(Debug, Clone)]
struct Def {
    name: String,
    body: Expr,
    terminal: bool,
}

/// Grammar definitions under construction; [`Builder::lark`] and [`Builder::gbnf`]
/// render them with a start expression.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    /// The most characters a string value may hold where its schema sets no smaller
    /// `maxLength` ([`Constraint::max_text`](super::Constraint::max_text)).
    pub max_text: Option<u32>,
    /// The tag that closes reasoning the prompt opened, when the reply starts inside it
    /// (the protocol's `starts_in_reasoning`): every scope then begins with the rest of
    /// that reasoning and this tag.
    pub opened_reasoning: Option<&'static str>,
    /// What the grammar leaves to validation (keywords it cannot say), for
    /// [`Grammar::notes`](super::Grammar::notes).
    pub notes: Vec<String>,
    defs: Vec<Def>,
    names: HashMap<String, usize>,
    /// Definitions by content, so that equal terminals and rules are written once.
    by_body: HashMap<(bool, String), String>,
    /// Every name as GBNF writes it ([`gbnf_name`]).
    gbnf_names: std::collections::HashSet<String>,
    /// What every text avoids besides its own patterns ([`avoid_everywhere`](Self::avoid_everywhere)).
    everywhere: Vec<Pattern>,
}

impl Builder {
    /// A builder for a grammar `constraint` asks for.
    pub(crate) fn new(constraint: &super::Constraint) -> Self {
        Builder { max_text: constraint.max_text, ..Builder::default() }
    }

    /// A rule named after `hint` (made unique); returns a reference to it.
    pub(crate) fn rule(&mut self, hint: &str, body: Expr) -> Expr {
        self.define(hint, body, false)
    }

    /// A terminal named after `hint`; `body` must be regular.
    pub(crate) fn terminal(&mut self, hint: &str, body: Expr) -> Expr {
        self.define(hint, body, true)
    }

    /// A terminal when `body` is regular (literals, sets and terminals), else a rule:
    /// for pieces that Lark must read as one lexeme where it can.
    pub(crate) fn token(&mut self, hint: &str, body: Expr) -> Expr {
        if self.regular(&body) {
            self.terminal(hint, body)
        } else {
            self.rule(&hint.to_ascii_lowercase(), body)
        }
    }

    fn regular(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Lit(_) | Expr::Spelled(_) | Expr::Set(_) => true,
            Expr::Avoid(text) => text.regular(),
            Expr::Matching { inner, .. } => self.regular(inner),
            Expr::Ref(name) => self.is_terminal(name),
            Expr::Seq(items) | Expr::Alt(items) => items.iter().all(|i| self.regular(i)),
            Expr::Rep(inner, ..) => self.regular(inner),
        }
    }

    /// A terminal that is any text holding none of `patterns`.
    pub(crate) fn avoiding(&mut self, hint: &str, patterns: Vec<Pattern>) -> Expr {
        self.avoiding_bounded(hint, patterns, 0, None)
    }

    /// Makes every text built from now on ([`avoiding`](Self::avoiding),
    /// [`avoiding_bounded`](Self::avoiding_bounded)) hold none of `patterns` either: for
    /// markup the reader cuts out wherever it stands (a format's own reasoning tokens,
    /// while reasoning is hidden), in free text and values alike.
    pub(crate) fn avoid_everywhere(&mut self, patterns: impl IntoIterator<Item = Pattern>) {
        for pattern in patterns {
            if !self.everywhere.contains(&pattern) {
                self.everywhere.push(pattern);
            }
        }
    }

    /// A terminal that is any text of `min` to `max` characters holding none of
    /// `patterns` (nor any pattern [`avoid_everywhere`](Self::avoid_everywhere) set).
    pub(crate) fn avoiding_bounded(
        &mut self,
        hint: &str,
        mut patterns: Vec<Pattern>,
        min: u32,
        max: Option<u32>,
    ) -> Expr {
        for pattern in &self.everywhere {
            if !patterns.contains(pattern) {
                patterns.push(pattern.clone());
            }
        }
        let max = max.map(|max| max.max(min));
        let text = AvoidText { patterns, min, max, guarded: false };
        // Bounded text that cannot be guarded is written out as an automaton of rules in
        // both dialects: as one regular expression, its count times the patterns' states
        // is more than llguidance's lexer takes.
        let terminal = text.regular();
        self.define(
            &if terminal { hint.to_string() } else { hint.to_ascii_lowercase() },
            Expr::Avoid(text),
            terminal,
        )
    }

    /// A terminal that is any text of `min` to `max` characters, none of which could begin
    /// one of `patterns` (see [`Guard`]); `None` when a pattern has no such characters.
    /// The text a regular expression then narrows ([`matching`](Self::matching)).
    pub(crate) fn guarded(
        &mut self,
        hint: &str,
        mut patterns: Vec<Pattern>,
        min: u32,
        max: Option<u32>,
    ) -> Option<Expr> {
        for pattern in &self.everywhere {
            if !patterns.contains(pattern) {
                patterns.push(pattern.clone());
            }
        }
        Guard::new(&patterns)?;
        let max = max.map(|max| max.max(min));
        Some(self.terminal(hint, Expr::Avoid(AvoidText { patterns, min, max, guarded: true })))
    }

    /// A terminal of the texts `inner` admits that every one of `regexes` matches whole
    /// (see [`Expr::Matching`]); `None` when `inner` is not one lexeme, which no regular
    /// expression can then narrow.
    pub(crate) fn matching(
        &mut self,
        hint: &str,
        inner: Expr,
        regexes: Vec<String>,
        note: String,
    ) -> Option<Expr> {
        if !self.regular(&inner) {
            return None;
        }
        Some(self.terminal(hint, Expr::Matching { inner: Box::new(inner), regexes, note }))
    }

    /// A name reserved now and defined later with [`Builder::define_reserved`] (for
    /// recursive rules).
    pub(crate) fn reserve(&mut self, hint: &str) -> String {
        let name = self.fresh(hint, false);
        self.names.insert(name.clone(), self.defs.len());
        self.defs.push(Def { name: name.clone(), body: Expr::Lit(String::new()), terminal: false });
        name
    }

    /// Gives the rule reserved as `name` its body.
    pub(crate) fn define_reserved(&mut self, name: &str, body: Expr) {
        if let Some(&at) = self.names.get(name)
            && let Some(def) = self.defs.get_mut(at)
        {
            def.body = body;
        }
    }

    fn define(&mut self, hint: &str, body: Expr, terminal: bool) -> Expr {
        let key = (terminal, format!("{body:?}"));
        if let Some(name) = self.by_body.get(&key) {
            return Expr::Ref(name.clone());
        }
        let name = self.fresh(hint, terminal);
        self.names.insert(name.clone(), self.defs.len());
        self.defs.push(Def { name: name.clone(), body, terminal });
        self.by_body.insert(key, name.clone());
        Expr::Ref(name)
    }

    fn fresh(&mut self, hint: &str, terminal: bool) -> String {
        let mut base: String = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .collect();
        base = base.trim_matches('_').to_string();
        if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
            base.insert_str(0, "r_");
        }
        if terminal {
            base = base.to_ascii_uppercase();
        }
        let mut name = base.clone();
        let mut n = 1;
        // Unique as GBNF writes names too (lower case, `-` for `_`): a terminal `VALUE`
        // and a rule `value` would be one rule there.
        while self.names.contains_key(&name)
            || self.gbnf_names.contains(&gbnf_name(&name))
            || matches!(gbnf_name(&name).as_str(), "start" | "root")
        {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.gbnf_names.insert(gbnf_name(&name));
        name
    }

    fn is_terminal(&self, name: &str) -> bool {
        self.names.get(name).and_then(|&at| self.defs.get(at)).is_some_and(|d| d.terminal)
    }

    /// The grammar in llguidance's Lark, starting at `start`, and what it leaves to
    /// validation (a length of free text whose automaton would be too large).
    pub(crate) fn lark(&self, start: &Expr) -> (String, Vec<String>) {
        let mut out = String::from("%llguidance {}\n\n");
        let mut notes = Vec::new();
        let _ = writeln!(out, "start: {}", self.lark_expr(start));
        for def in &self.defs {
            match &def.body {
                Expr::Avoid(text) if def.terminal => {
                    let _ = writeln!(out, "{}: {}", def.name, lark_avoid(text));
                }
                Expr::Avoid(text) => {
                    if let Err(note) = write_avoid(&mut out, &def.name, text, Rules::Lark) {
                        notes.push(note);
                    }
                }
                body => {
                    let _ = writeln!(out, "{}: {}", def.name, self.lark_expr(body));
                }
            }
        }
        (out, notes)
    }

    fn lark_expr(&self, expr: &Expr) -> String {
        match expr {
            Expr::Lit(text) | Expr::Spelled(text) => lark_string(text),
            Expr::Set(set) => format!("/{}/", set.lark()),
            Expr::Ref(name) => name.clone(),
            Expr::Seq(items) if items.is_empty() => "\"\"".to_string(),
            Expr::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    // A literal right after free text written as rules, one character at
                    // a time (see `gbnf_expr`).
                    Expr::Lit(text)
                        if i.checked_sub(1)
                            .and_then(|j| items.get(j))
                            .is_some_and(|prev| self.is_avoid_rule(prev)) =>
                    {
                        text.chars().map(|c| lark_string(&c.to_string())).collect::<Vec<_>>().join(" ")
                    }
                    Expr::Alt(_) => format!("({})", self.lark_expr(item)),
                    _ => self.lark_expr(item),
                })
                .collect::<Vec<_>>()
                .join(" "),
            Expr::Alt(items) => items.iter().map(|item| self.lark_expr(item)).collect::<Vec<_>>().join(" | "),
            Expr::Rep(inner, min, max) => repeated(inner, self.lark_expr(inner), *min, *max),
            // Only as a terminal's whole body (rendered by the caller).
            Expr::Avoid(text) => format!("({})", lark_avoid(text)),
            Expr::Matching { inner, regexes, .. } => {
                let mut out = format!("({})", self.lark_expr(inner));
                for regex in regexes {
                    let _ = write!(out, " & /{regex}/");
                }
                out
            }
        }
    }

    /// The grammar in llama.cpp's GBNF, starting at `start`, and what it leaves to
    /// validation (a length of free text whose automaton would be too large).
    pub(crate) fn gbnf(&self, start: &Expr) -> (String, Vec<String>) {
        let mut out = String::new();
        let mut notes = Vec::new();
        let _ = writeln!(out, "root ::= {}", self.gbnf_expr(start));
        for def in &self.defs {
            let name = gbnf_name(&def.name);
            match &def.body {
                Expr::Avoid(text) => {
                    if let Err(note) = write_avoid(&mut out, &name, text, Rules::Gbnf) {
                        notes.push(note);
                    }
                }
                Expr::Matching { inner, note, .. } => {
                    let _ = writeln!(out, "{name} ::= {}", self.gbnf_expr(inner));
                    notes.push(note.clone());
                }
                body => {
                    let _ = writeln!(out, "{name} ::= {}", self.gbnf_expr(body));
                }
            }
        }
        (out, notes)
    }

    /// Whether `expr` names free text written as rules (bounded text, in Lark).
    fn is_avoid_rule(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Ref(name) if self.names.get(name).and_then(|&at| self.defs.get(at)).is_some_and(|d| !d.terminal && matches!(d.body, Expr::Avoid(_))))
    }

    fn is_avoid(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Ref(name) if self.names.get(name).and_then(|&at| self.defs.get(at)).is_some_and(|d| matches!(d.body, Expr::Avoid(_))))
    }

    fn gbnf_expr(&self, expr: &Expr) -> String {
        match expr {
            Expr::Lit(text) => gbnf_string(text),
            Expr::Spelled(text) => {
                text.chars().map(|c| gbnf_string(&c.to_string())).collect::<Vec<_>>().join(" ")
            }
            Expr::Set(set) => set.gbnf(),
            Expr::Ref(name) => gbnf_name(name),
            Expr::Seq(items) if items.is_empty() => "\"\"".to_string(),
            Expr::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    // A literal right after free text, character by character: the same
                    // language, but a reader that makes each literal one lexeme (llguidance's)
                    // would otherwise pick the literal over free text that starts alike and
                    // never backtrack.
                    Expr::Lit(text)
                        if i.checked_sub(1)
                            .and_then(|j| items.get(j))
                            .is_some_and(|prev| self.is_avoid(prev)) =>
                    {
                        text.chars().map(|c| gbnf_string(&c.to_string())).collect::<Vec<_>>().join(" ")
                    }
                    Expr::Alt(_) => format!("({})", self.gbnf_expr(item)),
                    _ => self.gbnf_expr(item),
                })
                .collect::<Vec<_>>()
                .join(" "),
            Expr::Alt(items) => items.iter().map(|i| self.gbnf_expr(i)).collect::<Vec<_>>().join(" | "),
            Expr::Rep(inner, min, max) => repeated(inner, self.gbnf_expr(inner), *min, *max),
            // Rendered as rules by the caller.
            Expr::Avoid(_) => "\"\"".to_string(),
            // (Only as a terminal's body, rendered by the caller.)
            Expr::Matching { inner, .. } => self.gbnf_expr(inner),
        }
    }

    /// Whether every reference names a definition and terminals refer to terminals only
    /// (a check for tests and debug builds).
    pub(crate) fn check(&self, start: &Expr) -> Result<(), String> {
        fn refs<'e>(expr: &'e Expr, out: &mut Vec<&'e str>) {
            match expr {
                Expr::Ref(name) => out.push(name),
                Expr::Seq(items) | Expr::Alt(items) => items.iter().for_each(|i| refs(i, out)),
                Expr::Rep(inner, ..) | Expr::Matching { inner, .. } => refs(inner, out),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(start, &mut all);
        for def in &self.defs {
            let mut own = Vec::new();
            refs(&def.body, &mut own);
            for name in &own {
                if def.terminal && !self.is_terminal(name) {
                    return Err(format!("terminal {} refers to rule {name}", def.name));
                }
            }
            all.extend(own);
        }
        match all.iter().find(|name| !self.names.contains_key(**name)) {
            Some(name) => Err(format!("undefined {name}")),
            None => Ok(()),
        }
    }
}

/// `inner` (rendered as `text`) repeated from `min` to `max` times: the same operators in
/// Lark and GBNF.
fn repeated(inner: &Expr, text: String, min: u32, max: Option<u32>) -> String {
    let text = match inner {
        Expr::Seq(_) | Expr::Alt(_) | Expr::Rep(..) => format!("({text})"),
        _ => text,
    };
    match (min, max) {
        (0, Some(1)) => format!("{text}?"),
        (0, None) => format!("{text}*"),
        (1, None) => format!("{text}+"),
        (m, None) => format!("{text}{{{m},}}"),
        (m, Some(n)) if m == n => format!("{text}{{{m}}}"),
        (m, Some(n)) => format!("{text}{{{m},{n}}}"),
    }
}

fn lark_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A character inside a regular expression's class or as a literal.
fn regex_char(out: &mut String, c: char) {
    match c {
        '\\' | ']' | '[' | '^' | '-' | '/' | '.' | '*' | '+' | '?' | '(' | ')' | '{' | '}' | '|' | '$'
        | '&' | '~' => {
            out.push('\\');
            out.push(c);
        }
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || c == '\u{7F}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if !c.is_ascii() && !c.is_alphanumeric() => {
            let _ = write!(out, "\\x{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// `(?s:.*)` (or as many characters as the text may have) minus every text holding a
/// pattern.
fn lark_avoid(text: &AvoidText) -> String {
    if let Some((guard, max)) = text.guard() {
        return guard.body(text.min, max, Rules::Lark);
    }
    let patterns = &text.patterns;
    let mut out = match (text.min, text.max) {
        (0, None) => String::from("/(?s:.*)/"),
        (min, None) => format!("/(?s:.{{{min},}})/"),
        (min, Some(max)) => format!("/(?s:.{{{min},{max}}})/"),
    };
    let anywhere: Vec<String> =
        patterns.iter().filter(|p| !p.at_start && !p.at_end).map(Pattern::lark).collect();
    if !anywhere.is_empty() {
        let _ = write!(out, " & ~/(?s:.*)({})(?s:.*)/", anywhere.join("|"));
    }
    for pattern in patterns.iter().filter(|p| p.at_start || p.at_end) {
        let head = if pattern.at_start { "" } else { "(?s:.*)" };
        let tail = if pattern.at_end { "" } else { "(?s:.*)" };
        let _ = write!(out, " & ~/{head}{}{tail}/", pattern.lark());
    }
    out
}

/// GBNF names are lower case (llama.cpp's own grammars' style; llguidance's reader
/// would take upper-case names for Lark terminals).
fn gbnf_name(name: &str) -> String {
    name.replace('_', "-").to_ascii_lowercase()
}

fn gbnf_class_char(out: &mut String, c: char) {
    match c {
        '\\' | ']' | '[' => {
            out.push('\\');
            out.push(c);
        }
        // llama.cpp's reader has no `\^` or `\-`: written by code point.
        '^' | '-' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c => gbnf_escaped_char(out, c),
    }
}

/// A character as GBNF reads it: controls and Latin-1 by `\xNN`, other invisible
/// characters by `\uNNNN`, everything else as itself.
fn gbnf_escaped_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || ((c as u32) >= 0x7F && (c as u32) <= 0xFF) => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c if (c as u32) >= 0x1000 && (c as u32) <= 0xFFFF && !c.is_alphanumeric() && !c.is_ascii() => {
            let _ = write!(out, "\\u{:04X}", c as u32);
        }
        c => out.push(c),
    }
}

fn gbnf_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => gbnf_escaped_char(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// The most rules a length-bounded free text may take (its automaton's states times the
/// lengths it counts); past it the length is left to validation.
pub(crate) const BOUNDED_TEXT_RULES: usize = 20_000;

/// How automaton rules are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rules {
    Lark,
    Gbnf,
}

impl Rules {
    fn set(self, set: &CharSet) -> String {
        match self {
            Rules::Lark => format!("/{}/", set.lark()),
            Rules::Gbnf => set.gbnf(),
        }
    }

    /// A rule's name for state `state` of the rule `name` (GBNF joins with `-`).
    fn state(self, name: &str, state: &str) -> String {
        match self {
            Rules::Lark => format!("{name}_{}", state.replace('-', "_")),
            Rules::Gbnf => format!("{name}-{state}"),
        }
    }

    fn line(self, out: &mut String, rule: &str, body: &str) {
        let _ = match self {
            Rules::Lark => writeln!(out, "{rule}: {body}"),
            Rules::Gbnf => writeln!(out, "{rule} ::= {body}"),
        };
    }
}

/// Writes avoiding text as rules `NAME` (the start state) and `NAME-sK`: a deterministic
/// automaton over the characters that tracks every partial match of the patterns (and,
/// for a text of bounded length, how many characters it holds: `NAME-sK-nC`). `Err`
/// with a note when a bounded text would take more than [`BOUNDED_TEXT_RULES`] rules:
/// the text is then written without its bounds.
fn write_avoid(out: &mut String, name: &str, text: &AvoidText, rules: Rules) -> Result<(), String> {
    let automaton = Automaton::new(&text.patterns);
    let rule =
        |index: usize| if index == 0 { name.to_string() } else { rules.state(name, &format!("s{index}")) };
    if !text.bounded() {
        for (index, state) in automaton.states.iter().enumerate() {
            let moves = state.moves.iter().map(|(target, set)| (set, rule(*target)));
            write_state(out, &rule(index), moves, state.accepting, rules);
        }
        return Ok(());
    }
    let unbounded = |out: &mut String, why: String| {
        let unbounded = AvoidText { patterns: text.patterns.clone(), min: 0, max: None, guarded: false };
        write_avoid(out, name, &unbounded, rules)?;
        Err(format!(
            "a text of {}..{} characters {why}: its length is left to validation",
            text.min,
            text.max.map_or("∞".to_string(), |m| m.to_string())
        ))
    };
    // A bounded text is written as a count of characters that cannot begin a pattern
    // (see `Guard`): one rule, where the exact automaton times the count took
    // thousands, which llama.cpp's sampler walks at every token.
    if let Some((guard, max)) = text.guard() {
        rules.line(out, name, &guard.body(text.min, max, rules));
        return Ok(());
    }
    if text.max.is_some_and(|max| max as usize > BOUNDED_TEXT_RULES) {
        return unbounded(out, format!("is longer than {BOUNDED_TEXT_RULES} characters"));
    }
    // The product of the automaton and a count of characters, capped where it stops
    // mattering (at `max`, or at `min` when the text is unbounded above).
    let cap = text.max.unwrap_or(text.min) as usize;
    // Product states, numbered in the order they are reached.
    let mut index: HashMap<(usize, usize), usize> = HashMap::from([((0, 0), 0)]);
    let mut order = vec![(0usize, 0usize)];
    let mut at = 0;
    while let Some(&(state, count)) = order.get(at) {
        at += 1;
        if order.len() > BOUNDED_TEXT_RULES {
            return unbounded(out, format!("would take more than {BOUNDED_TEXT_RULES} rules"));
        }
        if text.max.is_some_and(|max| count >= max as usize) {
            continue;
        }
        let next_count = (count + 1).min(cap);
        for (target, _) in automaton.states.get(state).map(|s| s.moves.as_slice()).unwrap_or_default() {
            if let std::collections::hash_map::Entry::Vacant(e) = index.entry((*target, next_count)) {
                e.insert(order.len());
                order.push((*target, next_count));
            }
        }
    }
    let name_of = |state: usize, count: usize| {
        if (state, count) == (0, 0) {
            name.to_string()
        } else {
            rules.state(name, &format!("s{state}-n{count}"))
        }
    };
    let moves_of = |state: usize, count: usize| -> Vec<(usize, &CharSet)> {
        if text.max.is_some_and(|max| count >= max as usize) {
            return Vec::new();
        }
        let next_count = (count + 1).min(cap);
        let moves = automaton.states.get(state).map(|s| s.moves.as_slice()).unwrap_or_default();
        moves.iter().filter_map(|(target, set)| Some((*index.get(&(*target, next_count))?, set))).collect()
    };
    let accepting = |state: usize, count: usize| {
        automaton.states.get(state).is_some_and(|s| s.accepting) && count >= text.min as usize
    };
    // Only states from which the text can still end are written (a count at its bound
    // in a state that may not end the text leads nowhere).
    let mut live = vec![false; order.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (i, &(state, count)) in order.iter().enumerate().rev() {
            let on = |j: usize| live.get(j).copied().unwrap_or(false);
            if on(i) {
                continue;
            }
            if accepting(state, count) || moves_of(state, count).iter().any(|(j, _)| on(*j)) {
                if let Some(flag) = live.get_mut(i) {
                    *flag = true;
                }
                changed = true;
            }
        }
    }
    let on = |j: usize| live.get(j).copied().unwrap_or(false);
    if !on(0) {
        return unbounded(out, "cannot avoid the protocol's markup".to_string());
    }
    for (i, &(state, count)) in order.iter().enumerate() {
        if !on(i) {
            continue;
        }
        let moves: Vec<(&CharSet, String)> = moves_of(state, count)
            .into_iter()
            .filter(|(j, _)| on(*j))
            .filter_map(|(j, set)| order.get(j).map(|&(s, c)| (set, name_of(s, c))))
            .collect();
        write_state(out, &name_of(state, count), moves.into_iter(), accepting(state, count), rules);
    }
    Ok(())
}

/// Bounded free text as characters that cannot begin a pattern: none anywhere of the
/// characters an unanchored pattern can start with, none first that a pattern anchored at
/// the start can start with, none last that a pattern anchored at the end can end with.
/// Such a text holds no pattern, so it is sound; it admits less than the automaton (no
/// `<` at all in a value that must not hold `</parameter>`), which a bounded value, short
/// by design, rarely needs.
struct Guard {
    /// Characters banned anywhere, first, last.
    anywhere: CharSet,
    first: CharSet,
    last: CharSet,
}

impl Guard {
    /// `None` when a pattern has a negated set or could match the empty text (then only
    /// the automaton says what it may hold).
    fn new(patterns: &[Pattern]) -> Option<Guard> {
        let mut guard = Guard { anywhere: CharSet::of(""), first: CharSet::of(""), last: CharSet::of("") };
        for pattern in patterns {
            if pattern.pieces.iter().any(|piece| piece.set.negated) {
                return None;
            }
            // The characters an occurrence can start (end) with: each piece's up to and
            // with the first that is not starred.
            let edge = |pieces: &mut dyn Iterator<Item = &Piece>| -> Option<CharSet> {
                let mut set = CharSet::of("");
                for piece in pieces {
                    set = set.union(&piece.set);
                    if !piece.star {
                        return Some(set);
                    }
                }
                None
            };
            let starts = edge(&mut pattern.pieces.iter())?;
            let ends = edge(&mut pattern.pieces.iter().rev())?;
            match (pattern.at_start, pattern.at_end) {
                (false, false) => guard.anywhere = guard.anywhere.union(&starts),
                (true, false) => guard.first = guard.first.union(&starts),
                (false, true) => guard.last = guard.last.union(&ends),
                (true, true) => {
                    guard.first = guard.first.union(&starts);
                    guard.last = guard.last.union(&ends);
                }
            }
        }
        Some(guard)
    }

    /// The body of a rule (GBNF) or a terminal (Lark) of `min` to `max` characters.
    fn body(&self, min: u32, max: Option<u32>, rules: Rules) -> String {
        let mid = self.anywhere.clone().not();
        let first = self.anywhere.union(&self.first).not();
        let last = self.anywhere.union(&self.last).not();
        let one = self.anywhere.union(&self.first).union(&self.last).not();
        let set = |set: &CharSet| {
            // (No set is empty: `[^]` is no character class in either dialect.)
            let set =
                if set.negated && set.ranges.is_empty() { CharSet::of("\0").not() } else { set.clone() };
            match rules {
                Rules::Lark => set.lark(),
                Rules::Gbnf => set.gbnf(),
            }
        };
        let mut alternatives = Vec::new();
        if min <= 1 && max.is_none_or(|max| max >= 1) {
            alternatives.push(set(&one));
        }
        if max.is_none_or(|max| max >= 2) {
            let lo = min.max(2) - 2;
            let hi = max.map_or(String::new(), |max| (max - 2).to_string());
            let gap = if rules == Rules::Gbnf { " " } else { "" };
            alternatives.push(format!("{}{gap}{}{{{lo},{hi}}}{gap}{}", set(&first), set(&mid), set(&last)));
        }
        match (rules, min == 0) {
            _ if alternatives.is_empty() => "\"\"".to_string(),
            (Rules::Lark, true) => format!("/(?:{})?/", alternatives.join("|")),
            (Rules::Lark, false) => format!("/(?:{})/", alternatives.join("|")),
            (Rules::Gbnf, true) => format!("({})?", alternatives.join(" | ")),
            (Rules::Gbnf, false) => format!("({})", alternatives.join(" | ")),
        }
    }
}

/// One state's rule: a character of each set and the state it leads to, or (where the
/// text may end) nothing.
fn write_state<'s>(
    out: &mut String,
    rule: &str,
    moves: impl Iterator<Item = (&'s CharSet, String)>,
    accepting: bool,
    rules: Rules,
) {
    let alternatives: Vec<String> = moves.map(|(set, next)| format!("{} {next}", rules.set(set))).collect();
    let body = match (alternatives.is_empty(), accepting) {
        // (Only states from which the text can end are written.)
        (true, _) => "\"\"".to_string(),
        (false, true) => format!("({})?", alternatives.join(" | ")),
        (false, false) => alternatives.join(" | "),
    };
    rules.line(out, rule, &body);
}

/// A position in a pattern: `(pattern, piece)`.
type Position = (usize, usize);

/// One state of the avoiding automaton.
#[derive(Debug)]
struct State {
    /// Where each class of characters leads (characters not listed lead nowhere: a
    /// pattern would be complete).
    moves: Vec<(usize, CharSet)>,
    /// Whether the text may end here.
    accepting: bool,
}

/// The deterministic automaton of "holds none of the patterns".
#[derive(Debug)]
struct Automaton {
    states: Vec<State>,
}

impl Automaton {
    fn new(patterns: &[Pattern]) -> Self {
        // The alphabet: the elementary intervals of every set's ranges, and "any other".
        let mut cuts: BTreeSet<u32> = BTreeSet::new();
        for pattern in patterns {
            for piece in &pattern.pieces {
                for &(lo, hi) in &piece.set.ranges {
                    cuts.insert(lo as u32);
                    cuts.insert(hi as u32 + 1);
                }
            }
        }
        let cuts: Vec<u32> = cuts.into_iter().collect();
        let mut atoms: Vec<(char, char)> = Vec::new();
        for pair in cuts.windows(2) {
            if let [from, to] = *pair
                && let (Some(lo), Some(hi)) = (char_at_or_after(from), char_before(to))
                && lo <= hi
            {
                atoms.push((lo, hi));
            }
        }
        let mentioned = CharSet::ranges(&atoms);
        // A representative of each atom (to test set membership), and the "other" atom.
        let mut classes: Vec<(Option<(char, char)>, char)> =
            atoms.iter().map(|&(lo, hi)| (Some((lo, hi)), lo)).collect();
        if let Some(other) = first_outside(&mentioned) {
            classes.push((None, other));
        }

        let piece = |p: usize, i: usize| patterns.get(p).and_then(|pattern| pattern.pieces.get(i));
        let closure = |set: &mut BTreeSet<Position>| {
            let mut stack: Vec<Position> = set.iter().copied().collect();
            while let Some((p, i)) = stack.pop() {
                if let Some(piece) = piece(p, i)
                    && piece.star
                    && set.insert((p, i + 1))
                {
                    stack.push((p, i + 1));
                }
            }
        };
        let starts = |at_start: bool| {
            let mut set: BTreeSet<Position> = BTreeSet::new();
            for (p, pattern) in patterns.iter().enumerate() {
                if !pattern.at_start || at_start {
                    set.insert((p, 0));
                }
            }
            closure(&mut set);
            set
        };
        let done = |set: &BTreeSet<Position>, end: bool| {
            set.iter().any(|&(p, i)| {
                patterns.get(p).is_some_and(|pattern| i == pattern.pieces.len() && pattern.at_end == end)
            })
        };

        let initial = starts(true);
        // Where every pattern may begin again, after the first character.
        let restart = starts(false);
        let mut ids: BTreeMap<BTreeSet<Position>, usize> = BTreeMap::new();
        let mut sets: Vec<BTreeSet<Position>> = vec![initial.clone()];
        ids.insert(initial, 0);
        let mut states = Vec::new();
        let mut at = 0;
        while let Some(current) = sets.get(at).cloned() {
            let mut by_target: BTreeMap<usize, Vec<Option<(char, char)>>> = BTreeMap::new();
            for &(atom, sample) in &classes {
                let mut next = restart.clone();
                for &(p, i) in &current {
                    if let Some(piece) = piece(p, i)
                        && piece.set.contains(sample)
                    {
                        next.insert((p, if piece.star { i } else { i + 1 }));
                    }
                }
                closure(&mut next);
                // Keep only live positions: a complete anywhere-pattern kills the text.
                if done(&next, false) {
                    continue;
                }
                let id = match ids.get(&next) {
                    Some(&id) => id,
                    None => {
                        let id = sets.len();
                        ids.insert(next.clone(), id);
                        sets.push(next);
                        id
                    }
                };
                by_target.entry(id).or_default().push(atom);
            }
            let moves = by_target
                .into_iter()
                .map(|(target, atoms_here)| {
                    let set = if atoms_here.contains(&None) {
                        // Everything but the mentioned atoms that go elsewhere.
                        let elsewhere: Vec<(char, char)> =
                            atoms.iter().copied().filter(|a| !atoms_here.contains(&Some(*a))).collect();
                        CharSet::ranges(&elsewhere).not()
                    } else {
                        CharSet::ranges(&atoms_here.into_iter().flatten().collect::<Vec<_>>())
                    };
                    (target, set)
                })
                .collect();
            states.push(State { moves, accepting: !done(&current, true) });
            at += 1;
        }
        Automaton { states }
    }
}

fn char_at_or_after(mut code: u32) -> Option<char> {
    while code <= 0x10FFFF {
        if let Some(c) = char::from_u32(code) {
            return Some(c);
        }
        code += 1;
    }
    None
}

fn char_before(code: u32) -> Option<char> {
    let mut code = code.checked_sub(1)?;
    loop {
        if let Some(c) = char::from_u32(code) {
            return Some(c);
        }
        code = code.checked_sub(1)?;
    }
}

fn first_outside(set: &CharSet) -> Option<char> {
    let mut code = 0u32;
    for &(lo, hi) in &set.ranges {
        if code < lo as u32 {
            return char_at_or_after(code);
        }
        code = hi as u32 + 1;
    }
    char_at_or_after(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the automaton accepts `text`.
    fn accepts(patterns: &[Pattern], text: &str) -> bool {
        let automaton = Automaton::new(patterns);
        let mut state = 0;
        for c in text.chars() {
            match automaton.states[state].moves.iter().find(|(_, set)| set.contains(c)) {
                Some((next, _)) => state = *next,
                None => return false,
            }
        }
        automaton.states[state].accepting
    }

    #[test]
    fn the_automaton_rejects_exactly_the_texts_that_hold_a_pattern() {
        let patterns = vec![
            Pattern::text("「末」"),
            Pattern::text("<").then_any(CharSet::ascii_space()).then_any_case("think"),
            Pattern::new().then(CharSet::unicode_space()).at_start(),
            Pattern::new().then(CharSet::unicode_space()).at_end(),
            Pattern::text("`").at_end(),
        ];
        for (text, ok) in [
            ("", true),
            ("plain", true),
            ("a「末b」", true),
            ("a「末」b", false),
            ("「「末」", false),
            ("a <  THINK", false),
            ("a < b", true),
            ("<thin", true),
            (" lead", false),
            ("trail ", false),
            ("in side", true),
            ("tick`", false),
            ("`tick", true),
        ] {
            assert_eq!(accepts(&patterns, text), ok, "{text:?}");
        }
    }

    #[test]
    fn names_stay_apart_in_gbnf() {
        // A terminal and a rule whose names differ in case only (a number value, an
        // array value) are two rules in GBNF too, which writes names in lower case.
        let mut b = Builder::default();
        let number = b.terminal("VALUE", Expr::set(CharSet::range('0', '9')));
        let array = b.rule("value", Expr::seq([Expr::lit("["), Expr::Ref("json".into()), Expr::lit("]")]));
        let start = Expr::alt([number, array]);
        let (gbnf, _) = b.gbnf(&start);
        let heads: Vec<&str> = gbnf.lines().filter_map(|line| line.split(" ::= ").next()).collect();
        let mut unique = heads.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(heads.len(), unique.len(), "{gbnf}");
    }

    #[test]
    fn renderings_name_every_definition() {
        let mut b = Builder::default();
        let text = b.avoiding("text", vec![Pattern::text("ab")]);
        let until = b.terminal("until", Expr::seq([text.clone(), Expr::lit("ab")]));
        let start = Expr::seq([until, text]);
        b.check(&start).unwrap();
        let (lark, _) = b.lark(&start);
        assert!(lark.contains("TEXT: /(?s:.*)/ & ~/(?s:.*)([a][b])(?s:.*)/"), "{lark}");
        let (gbnf, notes) = b.gbnf(&start);
        assert!(notes.is_empty(), "{notes:?}");
        assert!(gbnf.starts_with("root ::= until text\n"), "{gbnf}");
        // The automaton: after an `a`, a `b` would complete the pattern.
        assert!(gbnf.contains("text ::= ([^a] text | [a] text-s1)?\n"), "{gbnf}");
        assert!(gbnf.contains("text-s1 ::= ([^a-b] text | [a] text-s1)?\n"), "{gbnf}");
        // A literal right after avoiding text, one character at a time.
        assert!(gbnf.contains("until ::= text \"a\" \"b\"\n"), "{gbnf}");
    }
}
