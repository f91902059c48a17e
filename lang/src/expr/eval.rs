//! Evaluates hcl-edit expressions to [`Value`]s.
//!
//! Unknown values propagate: any operation on an unknown yields unknown, so that a stack can be
//! validated and planned before the values computed by providers exist.

use crate::diag::suggest;
use crate::expr::functions;
use crate::expr::unify;
use crate::expr::whitespace::Layout;
use gpustack_protocol::{Number, Type, Value, format_number};
use hcl_edit::Span as _;
use hcl_edit::expr::{
    BinaryOperator, Expression, ForExpr, FuncCall, ObjectKey, TraversalOperator, UnaryOperator,
};
use hcl_edit::template::{Directive, Element, Template};
use indexmap::IndexMap;
use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

pub use budget::{MAX_DEPTH, MAX_RUN_VALUE_BYTES, MAX_STEPS, MAX_VALUE_BYTES, start_run};

/// The stack an evaluation level may need before the next one starts on a new segment.
const STACK_RED_ZONE: usize = 128 * 1024;
/// The size of each new stack segment.
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// When an evaluation checks how much stack is left. Asking where a thread's stack ends
/// costs a read of `/proc/self/maps` on a process's main thread (stacker's first use on a
/// thread), a good part of a small stack's `validate`: the levels of an evaluation within
/// [`UNCHECKED_STACK`] of the outermost one on the thread never ask.
mod stack {
    use std::cell::Cell;

    /// What any thread that evaluates has free below its outermost evaluation, with room for
    /// a level beyond it: the levels above it run unchecked.
    const UNCHECKED_STACK: usize = 256 * 1024;

    thread_local! {
        /// The highest (shallowest, as stacks grow down) address an evaluation started at on
        /// this thread, and whether an enclosing level is checking.
        static STACK: Cell<(usize, bool)> = const { Cell::new((0, false)) };
    }

    /// While held, the levels below check too: once one level may run on a segment stacker
    /// made, an address no longer says how deep the evaluation is.
    pub(super) struct Checking(bool);

    impl Drop for Checking {
        fn drop(&mut self) {
            let before = self.0;
            STACK.with(|s| s.set((s.get().0, before)));
        }
    }

    /// `Some` when this level checks the stack (the guard keeps the levels below checking);
    /// `None` when it is shallow enough not to.
    pub(super) fn checked() -> Option<Checking> {
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as usize;
        STACK.with(|s| {
            let (base, checking) = s.get();
            if checking {
                // Perhaps on a segment stacker made: its address says nothing of the base.
                return Some(Checking(true));
            }
            let base = base.max(here);
            if base - here < UNCHECKED_STACK {
                s.set((base, false));
                return None;
            }
            s.set((base, true));
            Some(Checking(false))
        })
    }
}

/// The limits of one evaluation. An expression of the stack and every template it renders
/// (`templatefile`, `templatestring`, each with an evaluator of its own) share one budget,
/// kept per thread: evaluation is synchronous, so the outermost `eval` on a thread is the
/// stack's expression and everything under it is its work.
///
/// **Invariant:** no stack, however hostile, makes an evaluation recurse past [`MAX_DEPTH`],
/// take more than [`MAX_STEPS`] steps or copy and build more than [`MAX_VALUE_BYTES`], and
/// no run's evaluations together build more than [`MAX_RUN_VALUE_BYTES`]: each ends it with a
/// located error naming the limit (`lang::eval::tests::limits_*`, `fast::hostile`,
/// `fast::hardening`).
mod budget {
    use super::EvalError;
    use std::cell::RefCell;
    use std::ops::Range;

    pub use crate::expr::limits::{MAX_DEPTH, MAX_RUN_VALUE_BYTES, MAX_STEPS, MAX_VALUE_BYTES};

    /// What the finished evaluations of the run built. A run is the process (one command, a
    /// fleet command's stacks together): the values of all of them may be held at once, on
    /// any of its threads. Each unit test of this crate is a run of its own, on its thread,
    /// so that tests side by side never share one.
    #[cfg(not(test))]
    mod run {
        use std::sync::atomic::{AtomicU64, Ordering};

        static BUILT: AtomicU64 = AtomicU64::new(0);

        pub(super) fn built() -> u64 {
            BUILT.load(Ordering::Relaxed)
        }

        pub(super) fn add(bytes: u64) {
            BUILT.fetch_add(bytes, Ordering::Relaxed);
        }

        pub(super) fn start() {
            BUILT.store(0, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    mod run {
        use std::cell::Cell;

        thread_local! {
            static BUILT: Cell<u64> = const { Cell::new(0) };
        }

        pub(super) fn built() -> u64 {
            BUILT.get()
        }

        pub(super) fn add(bytes: u64) {
            BUILT.set(BUILT.get().saturating_add(bytes));
        }

        pub(super) fn start() {
            BUILT.set(0);
        }
    }

    /// Starts a new run: what earlier evaluations built no longer counts. For a process that
    /// runs several in turn (the engine's sessions, a fuzz target's inputs).
    pub fn start_run() {
        run::start();
    }

    #[derive(Default)]
    struct Budget {
        depth: usize,
        /// Templates being rendered: a range inside one is not a range of the stack's file.
        templates: usize,
        steps: u64,
        bytes: u64,
        /// What the run's finished evaluations built when this one started: read once per
        /// expression, so that counting a value costs no more than before.
        run_before: u64,
        /// The first limit reached. It stands even where `try` or `can` caught the error it
        /// raised: an evaluation that ran out of budget has no result.
        exceeded: Option<EvalError>,
    }

    thread_local! {
        static BUDGET: RefCell<Budget> = RefCell::new(Budget::default());
    }

    /// Whether this evaluation is the outermost one on the thread.
    pub(super) struct Entered {
        outermost: bool,
    }

    /// Enters one level of evaluation; refuses when a limit is reached.
    pub(super) fn enter(range: Option<&Range<usize>>) -> Result<Entered, EvalError> {
        BUDGET.with_borrow_mut(|b| {
            let outermost = b.depth == 0;
            if outermost {
                *b = Budget {
                    run_before: run::built(),
                    ..Budget::default()
                };
            }
            if let Some(e) = &b.exceeded {
                return Err(e.clone());
            }
            b.steps += 1;
            let reached = if b.depth >= MAX_DEPTH {
                Some((
                    "Expression too deeply nested",
                    format!(
                        "Expressions, with the templates they render, may nest at most {MAX_DEPTH} levels deep (a template that renders itself never ends)."
                    ),
                ))
            } else if b.steps > MAX_STEPS {
                Some((
                    "Expression too costly",
                    format!("One evaluation may evaluate at most {MAX_STEPS} expressions."),
                ))
            } else {
                None
            };
            if let Some((summary, detail)) = reached {
                let e = EvalError::new(
                    range.filter(|_| b.templates == 0).cloned(),
                    summary,
                    detail,
                );
                b.exceeded = Some(e.clone());
                return Err(e);
            }
            b.depth += 1;
            Ok(Entered { outermost })
        })
    }

    /// Leaves a level; the outermost turns any limit reached under it into its own error, so
    /// that nothing swallowed it.
    pub(super) fn leave<T>(
        entered: Entered,
        result: Result<T, EvalError>,
        range: Option<Range<usize>>,
    ) -> Result<T, EvalError> {
        BUDGET.with_borrow_mut(|b| {
            b.depth -= 1;
            if !entered.outermost {
                return result;
            }
            b.templates = 0;
            // A refused evaluation's values are dropped with it: the run holds none of them.
            if b.exceeded.is_none() {
                run::add(b.bytes);
            }
            match b.exceeded.take() {
                Some(mut e) => {
                    if e.range.is_none() {
                        e.range = range;
                    }
                    Err(e)
                }
                None => result,
            }
        })
    }

    /// Counts `bytes` of values copied or built; refuses past [`MAX_VALUE_BYTES`], or past
    /// [`MAX_RUN_VALUE_BYTES`] with what the run built before.
    pub(super) fn spend(bytes: u64, range: Option<&Range<usize>>) -> Result<(), EvalError> {
        BUDGET.with_borrow_mut(|b| {
            b.bytes = b.bytes.saturating_add(bytes);
            if b.depth == 0
                || (b.bytes <= MAX_VALUE_BYTES
                    && b.run_before.saturating_add(b.bytes) <= MAX_RUN_VALUE_BYTES)
            {
                return Ok(());
            }
            let e = b.exceeded.get_or_insert_with(|| {
                let range = range.filter(|_| b.templates == 0).cloned();
                if b.bytes > MAX_VALUE_BYTES {
                    EvalError::new(
                        range,
                        "Expression too large",
                        format!(
                            "One evaluation may copy and build at most {} MiB of values.",
                            MAX_VALUE_BYTES >> 20
                        ),
                    )
                } else {
                    EvalError::new(
                        range,
                        "Run too large",
                        format!(
                            "All the evaluations of one run may copy and build at most {} MiB of values together; those before this one built {} MiB.",
                            MAX_RUN_VALUE_BYTES >> 20,
                            b.run_before >> 20
                        ),
                    )
                }
            });
            Err(e.clone())
        })
    }

    /// Runs `render` as a template nested in the current evaluation.
    pub(super) fn in_template<T>(render: impl FnOnce() -> T) -> T {
        BUDGET.with_borrow_mut(|b| b.templates += 1);
        let result = render();
        BUDGET.with_borrow_mut(|b| b.templates = b.templates.saturating_sub(1));
        result
    }

    /// Whether a limit was reached in the current evaluation.
    pub(super) fn exceeded() -> bool {
        BUDGET.with_borrow(|b| b.exceeded.is_some())
    }
}

/// A function's result within the limits any value built by one function has.
fn check_size(name: &str, value: &Value, range: Option<&Range<usize>>) -> Result<()> {
    let too_large = match value.peel() {
        Value::String(s) => s.len() > functions::MAX_STRING_BYTES,
        Value::List(items) => items.len() > functions::MAX_ELEMENTS,
        Value::Object(map) => map.len() > functions::MAX_ELEMENTS,
        _ => false,
    };
    if too_large {
        return Err(EvalError::new(
            range.cloned(),
            "Function result too large",
            format!(
                "{name}() would return more than {} MiB of text or {} elements, the most one function may build.",
                functions::MAX_STRING_BYTES >> 20,
                functions::MAX_ELEMENTS
            ),
        ));
    }
    Ok(())
}

/// A template's text so far within the longest string a template may build.
fn check_template_size(text: &str, range: Option<&Range<usize>>) -> Result<()> {
    if text.len() > functions::MAX_STRING_BYTES {
        return Err(EvalError::new(
            range.cloned(),
            "Template result too large",
            format!(
                "A template may render at most {} MiB of text.",
                functions::MAX_STRING_BYTES >> 20
            ),
        ));
    }
    Ok(())
}

/// About how many bytes `value` occupies: what copying it costs the budget.
fn weight(value: &Value) -> u64 {
    const NODE: u64 = 32;
    match value {
        Value::String(s) => NODE + s.len() as u64,
        Value::List(items) => NODE + items.iter().map(weight).sum::<u64>(),
        Value::Object(map) => {
            NODE + map
                .iter()
                .map(|(k, v)| k.len() as u64 + weight(v))
                .sum::<u64>()
        }
        Value::Sensitive(marked) => NODE + weight(&marked.value),
        _ => NODE,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub range: Option<Range<usize>>,
    pub summary: String,
    pub detail: String,
}

impl EvalError {
    pub fn new(
        range: Option<Range<usize>>,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            range,
            summary: summary.into(),
            detail: detail.into(),
        }
    }
}

type Result<T, E = EvalError> = std::result::Result<T, E>;

/// The texts of a mark that hides the whole result: no line of it may be shown (a value
/// chosen, compared or computed from a secret says something of the secret everywhere).
fn whole() -> Vec<String> {
    vec![String::new()]
}

/// Marks of several operands, merged.
#[derive(Default)]
struct Marks(Option<Vec<String>>);

impl Marks {
    /// Takes the top-level mark off `value`, remembering it.
    fn strip(&mut self, value: Value) -> Value {
        let (value, fragments) = value.unmark();
        if let Some(f) = fragments {
            self.0.get_or_insert_with(Vec::new).extend(f);
        }
        value
    }

    /// Notes that the result depends on a secret as a whole.
    fn taint(&mut self) {
        self.0.get_or_insert_with(Vec::new).extend(whole());
    }

    fn apply(self, value: Value) -> Value {
        match self.0 {
            Some(fragments) => Value::marked(value, fragments),
            None => value,
        }
    }
}

/// What names mean where an expression is evaluated.
pub trait Scope {
    /// Resolves a reference from its leading names (`["var", "x"]`, `["aks_nodepool", "t4", "name"]`,
    /// `["data", "t", "n"]`), returning its value and how many names it used; the evaluator applies
    /// the rest as attribute access. Errors are the scope's, since only it knows what is declared.
    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize)>;

    /// Reads a file for `file`, `templatefile` and `fileexists`: `Ok(None)` when it does not
    /// exist. Scopes of a plan record what they read; those of an apply read the record.
    fn read_file(&self, path: &str) -> Result<Option<String>, ReadInputError> {
        Ok(read_disk(path)?)
    }

    /// The value of an impure call (the clock, randomness) at `site`, from `make`. Scopes of a
    /// plan record it; those of an apply read the record, so that apply sees what the plan did.
    fn impure(
        &self,
        site: &str,
        make: &mut dyn FnMut() -> Result<Value, functions::CallError>,
    ) -> Result<Value, ImpureCallError> {
        let _ = site;
        Ok(make()?)
    }

    /// Where the record of inputs read (files, impure values) stands now: what an evaluation
    /// read between this mark and a later one is what went into its value.
    fn inputs_mark(&self) -> usize {
        0
    }

    /// What was read since `mark` went into a secret (the argument of `sensitive()`): a plan
    /// keeps those inputs only as digests.
    fn inputs_into_secret(&self, mark: usize) {
        let _ = mark;
    }

    /// Whether `expression` reads an ephemeral value into its result (an ephemeral variable,
    /// what derives from one): `ephemeralasnull()` answers null for it.
    fn reads_ephemeral(&self, expression: &Expression) -> bool {
        let _ = expression;
        false
    }

    /// The source (`NAMESPACE/TYPE`) of the provider this module's `required_providers` names
    /// `name`: a `provider::NAME::FUNCTION(...)` call reaches that provider's functions only
    /// then, as in Terraform and OpenTofu.
    fn required_provider(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
}

/// Why a file a function names could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read \"{path}\": {source}.")]
pub struct ReadFileError {
    pub path: String,
    pub source: gpustack_fs::ReadError,
}

/// Why a scope has no file for `file()` and friends.
#[derive(Debug, thiserror::Error)]
pub enum ReadInputError {
    #[error(transparent)]
    Disk(#[from] ReadFileError),
    /// The scope's own reason: a saved plan's record refuses the file.
    #[error(transparent)]
    Scope(Box<dyn std::error::Error + Send + Sync>),
}

/// Why an impure call has no value.
#[derive(Debug, thiserror::Error)]
pub enum ImpureCallError {
    /// Making the value failed.
    #[error(transparent)]
    Call(#[from] functions::CallError),
    /// The scope's own reason: a saved plan's record refuses the call.
    #[error(transparent)]
    Scope(Box<dyn std::error::Error + Send + Sync>),
}

/// A file from the disk; `Ok(None)` when there is none. Only a regular file is read, and
/// no more of it than a function may return.
pub fn read_disk(path: &str) -> Result<Option<String>, ReadFileError> {
    use gpustack_fs::ReadError;
    let limit = functions::MAX_STRING_BYTES as u64;
    match gpustack_fs::read_text_bounded(std::path::Path::new(path), limit) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::NotFound | ReadError::Directory) => Ok(None),
        Err(source) => Err(ReadFileError {
            path: path.to_owned(),
            source,
        }),
    }
}

/// A scope with nothing in it: for constant expressions.
pub struct EmptyScope;

impl Scope for EmptyScope {
    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize)> {
        Err(EvalError::new(
            range,
            "Variables not allowed",
            format!(
                "\"{}\" cannot be referenced here; only literal values are allowed.",
                names.join(".")
            ),
        ))
    }
}

/// Template variables of `templatefile`: each name is one variable; files are read as the
/// calling scope reads them.
struct VarsScope<'a>(&'a IndexMap<String, Value>, &'a dyn Scope);

impl Scope for VarsScope<'_> {
    fn read_file(&self, path: &str) -> Result<Option<String>, ReadInputError> {
        self.1.read_file(path)
    }

    fn reads_ephemeral(&self, expression: &Expression) -> bool {
        self.1.reads_ephemeral(expression)
    }

    fn impure(
        &self,
        site: &str,
        make: &mut dyn FnMut() -> Result<Value, functions::CallError>,
    ) -> Result<Value, ImpureCallError> {
        self.1.impure(site, make)
    }

    fn inputs_mark(&self) -> usize {
        self.1.inputs_mark()
    }

    fn inputs_into_secret(&self, mark: usize) {
        self.1.inputs_into_secret(mark)
    }

    fn lookup(
        &self,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'_, Value>, usize)> {
        let name = names.first().copied().unwrap_or_default();
        match self.0.get(name) {
            Some(v) => Ok((Cow::Borrowed(v), 1)),
            None => Err(EvalError::new(
                range,
                "Unknown template variable",
                format!(
                    "The template refers to \"{name}\", which is not in the variables passed to templatefile.{}",
                    suggest(name, self.0.keys().map(String::as_str))
                ),
            )),
        }
    }
}

pub struct Evaluator<'s> {
    scope: &'s dyn Scope,
    /// Iteration variables of enclosing `for` expressions and template directives, innermost last.
    bindings: Vec<(String, Value)>,
}

impl<'s> Evaluator<'s> {
    pub fn new(scope: &'s dyn Scope) -> Self {
        Self {
            scope,
            bindings: Vec::new(),
        }
    }

    pub fn eval(&mut self, expression: &Expression) -> Result<Value> {
        let range = expression.span();
        let entered = budget::enter(range.as_ref())?;
        // Frames of a template's parse and evaluation are large in a debug build; a thread
        // of any stack size reaches the depth limit, not the end of its stack.
        let result = match stack::checked() {
            None => self.eval_inner(expression),
            Some(_checking) => stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
                self.eval_inner(expression)
            }),
        };
        budget::leave(entered, result, range)
    }

    /// Counts a value copied or built against the evaluation's budget.
    fn spend(&self, value: &Value, range: Option<&Range<usize>>) -> Result<()> {
        budget::spend(weight(value), range)
    }

    /// Evaluates and converts to a type, naming the expected type in the error.
    pub fn eval_as(&mut self, expression: &Expression, ty: &Type) -> Result<Value> {
        let value = self.eval(expression)?;
        ty.convert(&value).map_err(|e| {
            EvalError::new(
                expression.span(),
                "Incorrect value type",
                format!("{}.", upper_first(&e.to_string())),
            )
        })
    }

    // Long by design: one arm per expression kind of HCL's syntax; each arm is short or calls
    // out, and the arms read as the language's grammar.
    fn eval_inner(&mut self, expression: &Expression) -> Result<Value> {
        let range = expression.span();
        match expression {
            Expression::Null(_) => Ok(Value::Null),
            Expression::Bool(b) => Ok(Value::Bool(*b.value())),
            Expression::Number(n) => Ok(Value::Number(crate::expr::literal::literal_number(n))),
            Expression::String(s) => Ok(Value::String(nfc(s.value().clone()))),
            Expression::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items.iter() {
                    out.push(self.eval(item)?);
                }
                Ok(Value::List(out))
            }
            Expression::Object(object) => {
                let mut out = IndexMap::with_capacity(object.len());
                let mut unknown_key = false;
                let mut marks = Marks::default();
                for (key, value) in object.iter() {
                    let name = match key {
                        ObjectKey::Ident(ident) => ident.as_str().to_owned(),
                        // A bare keyword is a name, as a bare identifier is (`{null = 1}`).
                        ObjectKey::Expression(Expression::Null(_)) => "null".to_owned(),
                        ObjectKey::Expression(Expression::Bool(b)) => b.value().to_string(),
                        ObjectKey::Expression(expr) => match marks.strip(self.eval(expr)?) {
                            Value::Unknown => {
                                unknown_key = true;
                                continue;
                            }
                            Value::String(s) => s,
                            Value::Number(n) => format_number(&n),
                            Value::Bool(b) => b.to_string(),
                            other => {
                                return Err(EvalError::new(
                                    expr.span(),
                                    "Invalid object key",
                                    format!(
                                        "Object keys must be strings, not {}.",
                                        other.type_name()
                                    ),
                                ));
                            }
                        },
                    };
                    // A key given twice takes its last value, as in HCL.
                    let v = self.eval(value.expr())?;
                    out.shift_remove(&name);
                    out.insert(name, v);
                }
                out.sort_unstable_keys();
                // A secret used as a key hides the whole object: keys are always shown.
                if marks.0.is_some() {
                    marks.taint();
                }
                Ok(marks.apply(if unknown_key {
                    Value::Unknown
                } else {
                    Value::Object(out)
                }))
            }
            Expression::StringTemplate(template) => {
                let template = crate::expr::whitespace::prepared(template, Layout::Quoted);
                self.whole_template(template.iter().collect::<Vec<_>>().as_slice(), range)
            }
            Expression::HeredocTemplate(heredoc) => {
                let template = crate::expr::whitespace::prepared(
                    &heredoc.template,
                    Layout::Lines(heredoc.indent()),
                );
                self.whole_template(template.iter().collect::<Vec<_>>().as_slice(), range)
            }
            Expression::Parenthesis(inner) => self.eval(inner.inner()),
            Expression::Variable(name) => self.reference(name.as_str(), &[], range),
            Expression::Traversal(traversal) => {
                if let Expression::Variable(root) = &traversal.expr {
                    let names: Vec<&str> = traversal
                        .operators
                        .iter()
                        .map_while(|op| match op.value() {
                            TraversalOperator::GetAttr(ident) => Some(ident.as_str()),
                            _ => None,
                        })
                        .collect();
                    let (value, used) = self.reference_prefix(
                        root.as_str(),
                        &names,
                        traversal_range(traversal, names.len()),
                    )?;
                    let (value, followed) =
                        self.follow(value, &traversal.operators[used..], range.as_ref())?;
                    self.apply(value, &traversal.operators[used + followed..])
                } else {
                    let value = self.eval(&traversal.expr)?;
                    self.apply(value, &traversal.operators)
                }
            }
            Expression::Conditional(cond) => {
                let mut marks = Marks::default();
                let condition = marks.strip(self.eval(&cond.cond_expr)?);
                if marks.0.is_some() {
                    marks.taint();
                }
                let which = match condition {
                    Value::Unknown => return Ok(marks.apply(Value::Unknown)),
                    Value::Bool(b) => b,
                    other => match Type::Bool.convert(&other) {
                        Ok(Value::Bool(b)) => b,
                        _ => {
                            return Err(EvalError::new(
                                cond.cond_expr.span(),
                                "Incorrect condition type",
                                format!("The condition must be a bool, not {}.", other.type_name()),
                            ));
                        }
                    },
                };
                let (chosen_expr, other_expr) = if which {
                    (&cond.true_expr, &cond.false_expr)
                } else {
                    (&cond.false_expr, &cond.true_expr)
                };
                let chosen = self.eval(chosen_expr)?;
                // The other arm counts only for its type (an error there is HCL's unknown
                // value of any type): the result has the type both arms unify to.
                let chosen = match self.eval(other_expr) {
                    Ok(other) => {
                        let (t, f) = if which {
                            (&chosen, &other)
                        } else {
                            (&other, &chosen)
                        };
                        let types = [unify::type_of(t), unify::type_of(f)];
                        let Some(ty) = unify::unify(&types, true) else {
                            return Err(EvalError::new(
                                range,
                                "Inconsistent conditional result types",
                                format!(
                                    "The true and false result expressions must have consistent types: the true value is {}, the false value is {}.",
                                    types[0].friendly(),
                                    types[1].friendly()
                                ),
                            ));
                        };
                        if ty == unify::Ty::Dynamic {
                            chosen
                        } else {
                            ty.to_type().convert(&chosen).map_err(|e| {
                                EvalError::new(
                                    chosen_expr.span(),
                                    "Inconsistent conditional result types",
                                    format!("The result cannot be converted to the arms' common type: {e}."),
                                )
                            })?
                        }
                    }
                    Err(_) => chosen,
                };
                Ok(marks.apply(chosen))
            }
            Expression::FuncCall(call) => self.call(call, range),
            Expression::UnaryOp(op) => {
                let mut marks = Marks::default();
                let value = marks.strip(self.eval(&op.expr)?);
                if marks.0.is_some() {
                    marks.taint();
                }
                if value.is_unknown() {
                    return Ok(marks.apply(Value::Unknown));
                }
                let secret = marks.0.is_some();
                let result = match op.operator.value() {
                    UnaryOperator::Neg => {
                        Value::Number(self.number(&value, &op.expr, secret)?.neg())
                    }
                    UnaryOperator::Not => Value::Bool(!self.boolean(&value, &op.expr, secret)?),
                };
                Ok(marks.apply(result))
            }
            Expression::BinaryOp(op) => self.binary(op),
            Expression::ForExpr(for_expr) => self.for_expr(for_expr),
        }
    }

    fn reference(
        &mut self,
        root: &str,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<Value> {
        let (value, used) = self.reference_prefix(root, names, range.clone())?;
        let value = value.into_owned();
        self.spend(&value, range.as_ref())?;
        if used != names.len() {
            return Err(EvalError::new(
                range,
                "Invalid reference",
                "Unexpected reference shape.",
            ));
        }
        Ok(value)
    }

    /// Resolves `root.names…`: iteration variables first, then the scope.
    fn reference_prefix(
        &mut self,
        root: &str,
        names: &[&str],
        range: Option<Range<usize>>,
    ) -> Result<(Cow<'s, Value>, usize)> {
        if let Some((_, v)) = self.bindings.iter().rev().find(|(n, _)| n == root) {
            self.spend(v, range.as_ref())?;
            return Ok((Cow::Owned(v.clone()), 0));
        }
        let mut all = Vec::with_capacity(names.len() + 1);
        all.push(root);
        all.extend_from_slice(names);
        let scope = self.scope;
        let (value, used) = scope.lookup(&all, range)?;
        Ok((value, used.saturating_sub(1).min(names.len())))
    }

    /// Follows the leading attribute and index steps of `operators` that plainly select a
    /// part of a borrowed value, so that only that part is copied (`resource.x[key].id` reads
    /// one instance, not the whole map of them), and says how many it followed. It stops at
    /// whatever needs `apply`'s rules (marks, unknowns, conversions, splats, errors); apply
    /// then evaluates those steps from there, so the result is the same.
    fn follow(
        &mut self,
        value: Cow<'s, Value>,
        operators: &[hcl_edit::Decorated<TraversalOperator>],
        range: Option<&Range<usize>>,
    ) -> Result<(Value, usize)> {
        let Cow::Borrowed(mut current) = value else {
            return Ok((value.into_owned(), 0));
        };
        let mut followed = 0;
        for op in operators {
            let next = match (op.value(), current) {
                (TraversalOperator::GetAttr(ident), Value::Object(map)) => map.get(ident.as_str()),
                (TraversalOperator::Index(index), Value::Object(_) | Value::List(_)) => {
                    match (&self.eval(index)?, current) {
                        (Value::String(key), Value::Object(map)) => map.get(key),
                        (Value::Number(n), Value::List(items)) => n
                            .to_i64()
                            .and_then(|i| usize::try_from(i).ok())
                            .and_then(|i| items.get(i)),
                        _ => None,
                    }
                }
                (TraversalOperator::LegacyIndex(n), Value::List(items)) => {
                    usize::try_from(*n.value()).ok().and_then(|i| items.get(i))
                }
                _ => None,
            };
            let Some(next) = next else { break };
            current = next;
            followed += 1;
        }
        self.spend(current, range)?;
        Ok((current.clone(), followed))
    }

    /// Applies traversal steps (attributes, indexes, splats) to a value.
    /// A part of a marked collection is marked as the collection is; a secret index hides
    /// what it selects.
    fn apply(
        &mut self,
        mut value: Value,
        operators: &[hcl_edit::Decorated<TraversalOperator>],
    ) -> Result<Value> {
        let mut marks = Marks::default();
        for (i, op) in operators.iter().enumerate() {
            let range = op.span();
            value = marks.strip(value);
            match op.value() {
                TraversalOperator::GetAttr(ident) => {
                    value = get_attr(value, ident.as_str(), range)?
                }
                TraversalOperator::Index(index) => {
                    let mut key_marks = Marks::default();
                    let key = key_marks.strip(self.eval(index)?);
                    if key_marks.0.is_some() {
                        marks.taint();
                    }
                    value = get_index(value, &key, index.span())?;
                }
                TraversalOperator::LegacyIndex(n) => {
                    if matches!(
                        operators.get(i + 1).map(|o| o.value()),
                        Some(TraversalOperator::LegacyIndex(_))
                    ) {
                        return Err(EvalError::new(
                            range,
                            "Invalid legacy index syntax",
                            "When using the legacy index syntax, chaining two indexes together is not permitted. Use the proper index syntax instead, like [0][0].",
                        ));
                    }
                    value = get_index(value, &Value::number(*n.value()), range)?
                }
                TraversalOperator::AttrSplat(_) | TraversalOperator::FullSplat(_) => {
                    let rest = &operators[i + 1..];
                    // A legacy `.*` takes in only the attributes and `.N` indexes after it: a
                    // `[...]` index applies to the list it makes. `[*]` takes in everything.
                    let (inner, outer) = if matches!(op.value(), TraversalOperator::AttrSplat(_)) {
                        let n = rest
                            .iter()
                            .take_while(|o| {
                                matches!(
                                    o.value(),
                                    TraversalOperator::GetAttr(_)
                                        | TraversalOperator::LegacyIndex(_)
                                        | TraversalOperator::AttrSplat(_)
                                )
                            })
                            .count();
                        if rest[..n]
                            .iter()
                            .any(|o| matches!(o.value(), TraversalOperator::AttrSplat(_)))
                        {
                            return Err(EvalError::new(
                                range,
                                "Nested splat expression not allowed",
                                "A splat expression (*) cannot be used inside another attribute-only splat expression.",
                            ));
                        }
                        rest.split_at(n)
                    } else {
                        (rest, &rest[rest.len()..])
                    };
                    let items = match value {
                        Value::Unknown => return Ok(marks.apply(Value::Unknown)),
                        Value::Null => Vec::new(),
                        Value::List(items) => items,
                        single => vec![single],
                    };
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        out.push(self.apply(item, inner)?);
                    }
                    let result = self.apply(Value::List(out), outer)?;
                    return Ok(marks.apply(result));
                }
            }
        }
        Ok(marks.apply(value))
    }

    /// A template as an expression: one interpolation alone (`"${x}"`) is its value, of
    /// whatever type, as HCL unwraps it; anything else renders a string.
    fn whole_template(
        &mut self,
        elements: &[&Element],
        range: Option<Range<usize>>,
    ) -> Result<Value> {
        if let [Element::Interpolation(only)] = elements {
            return self.eval(&only.expr);
        }
        self.template(elements, range)
    }

    /// A secret interpolated into a template marks the result with the interpolated text, so
    /// that the result's other lines can still be shown; a secret deciding a directive hides
    /// the whole result.
    fn template(&mut self, elements: &[&Element], range: Option<Range<usize>>) -> Result<Value> {
        let mut out = String::new();
        let mut unknown = false;
        let mut marks = Marks::default();
        for (i, element) in elements.iter().enumerate() {
            match element {
                Element::Literal(literal) => {
                    let mut text: &str = literal.value();
                    if i > 0 && strips_end(elements[i - 1]) {
                        text = text.trim_start();
                    }
                    if elements.get(i + 1).is_some_and(|next| strips_start(next)) {
                        text = text.trim_end();
                    }
                    out.push_str(text);
                }
                Element::Interpolation(interpolation) => {
                    let (value, fragments) = self.eval(&interpolation.expr)?.unmark();
                    let value = plain(value);
                    match value {
                        Value::Unknown => {
                            unknown = true;
                            if fragments.is_some() {
                                marks.taint();
                            }
                        }
                        value => {
                            let text =
                                self.to_template_string(&value, interpolation.expr.span())?;
                            if let Some(mut fragments) = fragments {
                                // What is hidden is the text as it appears here, whatever
                                // made it (a secret, its base64, its hash).
                                fragments.retain(String::is_empty);
                                fragments.push(text.clone());
                                marks.0.get_or_insert_with(Vec::new).extend(fragments);
                            }
                            out.push_str(&text)
                        }
                    }
                }
                Element::Directive(directive) => match directive.as_ref() {
                    Directive::If(d) => {
                        let cond = self.eval(&d.if_expr.cond_expr)?;
                        if cond.contains_sensitive() {
                            marks.taint();
                        }
                        let cond = plain(cond);
                        if cond.is_unknown() {
                            unknown = true;
                            continue;
                        }
                        let cond = self.boolean(&cond, &d.if_expr.cond_expr, marks.0.is_some())?;
                        let endif_strips = d.endif_expr.strip.strip_start();
                        // The markers inside the directive trim the branch's own text.
                        let chosen = match (&d.else_expr, cond) {
                            (_, true) => Some((
                                &d.if_expr.template,
                                d.if_expr.strip.strip_end(),
                                d.else_expr
                                    .as_ref()
                                    .map_or(endif_strips, |e| e.strip.strip_start()),
                            )),
                            (Some(e), false) => {
                                Some((&e.template, e.strip.strip_end(), endif_strips))
                            }
                            (None, false) => None,
                        };
                        if let Some((template, trim_start, trim_end)) = chosen {
                            match marks.strip(self.template_of(template, range.clone())?) {
                                Value::String(s) => out.push_str(trimmed(&s, trim_start, trim_end)),
                                _ => unknown = true,
                            }
                        }
                    }
                    Directive::For(d) => {
                        let collection = self.eval(&d.for_expr.collection_expr)?;
                        if collection.is_sensitive() {
                            marks.taint();
                        }
                        let collection = marks.strip(collection);
                        let pairs =
                            match iteration_pairs(collection, d.for_expr.collection_expr.span())? {
                                Some(pairs) => pairs,
                                None => {
                                    unknown = true;
                                    continue;
                                }
                            };
                        for (key, value) in pairs {
                            let pushed = self.bind(
                                d.for_expr.key_var.as_ref().map(|k| k.as_str()),
                                d.for_expr.value_var.as_str(),
                                key,
                                value,
                            );
                            let result = self.template_of(&d.for_expr.template, range.clone());
                            self.bindings.truncate(self.bindings.len() - pushed);
                            match marks.strip(result?) {
                                Value::String(s) => out.push_str(trimmed(
                                    &s,
                                    d.for_expr.strip.strip_end(),
                                    d.endfor_expr.strip.strip_start(),
                                )),
                                _ => unknown = true,
                            }
                            check_template_size(&out, range.as_ref())?;
                        }
                    }
                },
            }
        }
        check_template_size(&out, range.as_ref())?;
        Ok(marks.apply(if unknown {
            Value::Unknown
        } else {
            Value::String(nfc(out))
        }))
    }

    fn template_of(&mut self, template: &Template, range: Option<Range<usize>>) -> Result<Value> {
        self.template(template.iter().collect::<Vec<_>>().as_slice(), range)
    }

    fn to_template_string(&self, value: &Value, range: Option<Range<usize>>) -> Result<String> {
        match value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(format_number(n)),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Null => Err(EvalError::new(
                range,
                "Invalid template interpolation value",
                "The value is null; use coalesce() or a conditional to give it a default.",
            )),
            other => Err(EvalError::new(
                range,
                "Invalid template interpolation value",
                format!(
                    "Cannot include a {} in a string template; use jsonencode() or join() to turn it into a string.",
                    other.type_name()
                ),
            )),
        }
    }

    /// Binds iteration variables; returns how many were pushed.
    fn bind(&mut self, key_var: Option<&str>, value_var: &str, key: Value, value: Value) -> usize {
        let mut pushed = 1;
        if let Some(k) = key_var {
            self.bindings.push((k.to_owned(), key));
            pushed += 1;
        }
        self.bindings.push((value_var.to_owned(), value));
        pushed
    }

    /// A marked collection marks what is made from it; a secret key or condition hides the
    /// whole result.
    fn for_expr(&mut self, f: &ForExpr) -> Result<Value> {
        let mut marks = Marks::default();
        let collection = marks.strip(self.eval(&f.intro.collection_expr)?);
        let Some(pairs) = iteration_pairs(collection, f.intro.collection_expr.span())? else {
            return Ok(marks.apply(Value::Unknown));
        };
        let key_var = f.intro.key_var.as_ref().map(|k| k.as_str().to_owned());
        let value_var = f.intro.value_var.as_str().to_owned();
        let mut list = Vec::new();
        let mut object: IndexMap<String, Value> = IndexMap::new();
        let mut unknown = false;
        for (key, value) in pairs {
            let pushed = self.bind(key_var.as_deref(), &value_var, key, value);
            let result = self.for_item(f, &mut marks);
            self.bindings.truncate(self.bindings.len() - pushed);
            if list.len().max(object.len()) >= functions::MAX_ELEMENTS {
                return Err(EvalError::new(
                    f.intro.collection_expr.span(),
                    "For expression too large",
                    format!(
                        "A for expression may produce at most {} elements.",
                        functions::MAX_ELEMENTS
                    ),
                ));
            }
            match result? {
                ForItem::Skip => {}
                ForItem::Unknown => unknown = true,
                ForItem::Element(v) => list.push(v),
                ForItem::Entry(k, v) => {
                    if f.grouping {
                        match object.entry(k).or_insert_with(|| Value::List(Vec::new())) {
                            Value::List(group) => group.push(v),
                            _ => unknown = true,
                        }
                    } else if object.contains_key(&k) {
                        let range = f.key_expr.as_ref().and_then(|k| k.span());
                        return Err(EvalError::new(
                            range,
                            "Duplicate object key",
                            format!(
                                "Two elements produce the key \"{k}\". Add ... after the value expression to group them into lists."
                            ),
                        ));
                    } else {
                        object.insert(k, v);
                    }
                }
            }
        }
        if unknown {
            return Ok(marks.apply(Value::Unknown));
        }
        Ok(marks.apply(if f.key_expr.is_some() {
            object.sort_unstable_keys();
            Value::Object(object)
        } else {
            Value::List(list)
        }))
    }

    fn for_item(&mut self, f: &ForExpr, marks: &mut Marks) -> Result<ForItem> {
        if let Some(cond) = &f.cond {
            let condition = self.eval(&cond.expr)?;
            if condition.contains_sensitive() {
                marks.taint();
            }
            match plain(condition) {
                Value::Unknown => return Ok(ForItem::Unknown),
                v => {
                    if !self.boolean(&v, &cond.expr, marks.0.is_some())? {
                        return Ok(ForItem::Skip);
                    }
                }
            }
        }
        let value = self.eval(&f.value_expr)?;
        let Some(key_expr) = &f.key_expr else {
            return Ok(ForItem::Element(value));
        };
        let key = self.eval(key_expr)?;
        if key.contains_sensitive() {
            marks.taint();
        }
        match plain(key) {
            Value::Unknown => Ok(ForItem::Unknown),
            Value::String(s) => Ok(ForItem::Entry(s, value)),
            Value::Number(n) => Ok(ForItem::Entry(format_number(&n), value)),
            Value::Bool(b) => Ok(ForItem::Entry(b.to_string(), value)),
            other => Err(EvalError::new(
                key_expr.span(),
                "Invalid object key",
                format!("Object keys must be strings, not {}.", other.type_name()),
            )),
        }
    }

    /// An operation on a secret gives a secret.
    fn binary(&mut self, op: &hcl_edit::expr::BinaryOp) -> Result<Value> {
        let mut marks = Marks::default();
        let result = self.binary_unmarked(op, &mut marks);
        if marks.0.is_some() {
            marks.taint();
        }
        result.map(|v| marks.apply(v))
    }

    fn binary_unmarked(
        &mut self,
        op: &hcl_edit::expr::BinaryOp,
        marks: &mut Marks,
    ) -> Result<Value> {
        let operator = *op.operator.value();
        let lhs = self.eval(&op.lhs_expr)?;
        let lhs_secret = lhs.contains_sensitive();
        if lhs_secret {
            marks.taint();
        }
        let lhs = plain(lhs);
        // Logical operators short-circuit on a known deciding left side, so that
        // `var.x != null && var.x.enabled` works as users expect.
        match (operator, &lhs) {
            (BinaryOperator::And, Value::Bool(false)) => return Ok(Value::Bool(false)),
            (BinaryOperator::Or, Value::Bool(true)) => return Ok(Value::Bool(true)),
            _ => {}
        }
        let rhs = self.eval(&op.rhs_expr)?;
        let rhs_secret = rhs.contains_sensitive();
        if rhs_secret {
            marks.taint();
        }
        let rhs = plain(rhs);
        if lhs.is_unknown() || rhs.is_unknown() {
            return Ok(Value::Unknown);
        }
        use BinaryOperator::*;
        match operator {
            Eq => Ok(equal(&lhs, &rhs).map_or(Value::Unknown, Value::Bool)),
            NotEq => Ok(equal(&lhs, &rhs).map_or(Value::Unknown, |b| Value::Bool(!b))),
            And | Or => {
                let a = self.boolean(&lhs, &op.lhs_expr, lhs_secret)?;
                let b = self.boolean(&rhs, &op.rhs_expr, rhs_secret)?;
                Ok(Value::Bool(if operator == And { a && b } else { a || b }))
            }
            _ => {
                let a = self.number(&lhs, &op.lhs_expr, lhs_secret)?;
                let b = self.number(&rhs, &op.rhs_expr, rhs_secret)?;
                use std::cmp::Ordering;
                let undefined = |what: &str| {
                    EvalError::new(
                        op.operator.span(),
                        "Invalid arithmetic",
                        format!("The result is not a number: {what}."),
                    )
                };
                let value = match operator {
                    Plus => Value::Number(
                        a.add(&b)
                            .map_err(|_| undefined("the sum of opposing infinities"))?,
                    ),
                    Minus => Value::Number(
                        a.sub(&b)
                            .map_err(|_| undefined("infinity subtracted from itself"))?,
                    ),
                    Mul => Value::Number(
                        functions::multiply(&a, &b)
                            .map_err(|_| undefined("zero multiplied by infinity"))?,
                    ),
                    Div => Value::Number(
                        a.div(&b)
                            .map_err(|_| undefined("zero by zero or infinity by infinity"))?,
                    ),
                    Mod => Value::Number(
                        functions::modulo(&a, &b)
                            .map_err(|_| undefined("modulo with zero and infinity"))?,
                    ),
                    Less => Value::Bool(a.cmp_value(&b) == Ordering::Less),
                    LessEq => Value::Bool(a.cmp_value(&b) != Ordering::Greater),
                    Greater => Value::Bool(a.cmp_value(&b) == Ordering::Greater),
                    GreaterEq => Value::Bool(a.cmp_value(&b) != Ordering::Less),
                    Eq | NotEq | And | Or => Value::Null,
                };
                Ok(value)
            }
        }
    }

    /// `secret`: the operand was sensitive, so an error names its type, never its text.
    fn number(&self, value: &Value, expression: &Expression, secret: bool) -> Result<Number> {
        match Type::Number.convert(value) {
            Ok(Value::Number(n)) => Ok(n),
            _ => Err(EvalError::new(
                expression.span(),
                "Invalid operand",
                format!("A number is required, not {}.", describe(value, secret)),
            )),
        }
    }

    fn boolean(&self, value: &Value, expression: &Expression, secret: bool) -> Result<bool> {
        match Type::Bool.convert(value) {
            Ok(Value::Bool(b)) => Ok(b),
            _ => Err(EvalError::new(
                expression.span(),
                "Invalid operand",
                format!("A bool is required, not {}.", describe(value, secret)),
            )),
        }
    }

    /// `convert(value, type)`: the value converted to the type constraint, as a variable of
    /// that type would hold it; the value's marks stay on the result.
    fn call_convert(&mut self, args: &[&Expression], range: Option<Range<usize>>) -> Result<Value> {
        let [value, ty] = args else {
            return Err(EvalError::new(
                range,
                "Wrong number of arguments",
                "Function \"convert\" expects 2 arguments: a value and a type constraint.",
            ));
        };
        let ty = crate::expr::types::parse_type(ty).map_err(|(at, message)| {
            EvalError::new(at.or(ty.span()), "Invalid type constraint", message)
        })?;
        let value = self.eval(value)?;
        if value.is_unknown() {
            return Ok(value);
        }
        let mut marks = Marks::default();
        let plain_value = marks.strip(value);
        ty.convert(&plain_value)
            .map(|converted| marks.apply(converted))
            .map_err(|e| {
                EvalError::new(
                    args[0].span().or(range),
                    "Invalid function argument",
                    format!("Invalid value for \"value\" parameter: {e}."),
                )
            })
    }

    // Long by design: a call's steps in the order they must run (the namespace, the arguments
    // with their unknowns and marks, a secret's sources, the expansion of `...`, the clock and
    // randomness recorded in the plan, marks back on the result); split, each step would carry
    // the same half-dozen bindings.
    fn call(&mut self, call: &FuncCall, range: Option<Range<usize>>) -> Result<Value> {
        let name = call.name.name.as_str();
        let provider = self.function_provider(call, range.clone())?;
        let shown = match &provider {
            Some((local, _)) => format!("provider::{local}::{name}"),
            None => name.to_owned(),
        };
        let arg_exprs: Vec<&Expression> = call.args.iter().collect();
        match name {
            _ if provider.is_some() => {}
            "try" => return self.call_try(&arg_exprs, range),
            // Terraform 1.15: its second argument is a type constraint, read as written.
            "convert" => return self.call_convert(&arg_exprs, range),
            "ephemeralasnull" => {
                let [arg] = arg_exprs.as_slice() else {
                    return Err(EvalError::new(
                        range,
                        "Wrong number of arguments",
                        "Function \"ephemeralasnull\" expects 1 argument.",
                    ));
                };
                let value = self.eval(arg)?;
                return Ok(if self.scope.reads_ephemeral(arg) {
                    Value::Null
                } else {
                    value
                });
            }
            "can" => {
                let [arg] = arg_exprs.as_slice() else {
                    return Err(EvalError::new(
                        range,
                        "Wrong number of arguments",
                        "Function \"can\" expects 1 argument.",
                    ));
                };
                return Ok(match self.eval(arg) {
                    Ok(v) if v.is_unknown() => Value::Unknown,
                    Ok(_) => Value::Bool(true),
                    Err(_) => Value::Bool(false),
                });
            }
            _ => {}
        }
        // Whatever the argument of sensitive() read is a secret's source, even where the
        // secret's own text is not the file's (a base64 of it, a part of it).
        let inputs = (provider.is_none() && name == "sensitive").then(|| self.scope.inputs_mark());
        let mut args = Vec::with_capacity(arg_exprs.len());
        for expr in &arg_exprs {
            args.push(self.eval(expr)?);
        }
        if let Some(mark) = inputs {
            self.scope.inputs_into_secret(mark);
        }
        match name {
            _ if provider.is_some() => {}
            "sensitive" | "nonsensitive" | "issensitive" => {
                let [arg] = args.as_slice() else {
                    return Err(EvalError::new(
                        range,
                        "Wrong number of arguments",
                        format!("Function \"{name}\" expects 1 argument."),
                    ));
                };
                return Ok(match name {
                    "sensitive" => Value::sensitive(arg.clone()),
                    // Terraform's nonsensitive takes the value's own mark off, not those of
                    // what it holds.
                    "nonsensitive" => arg.clone().unmark().0,
                    _ if arg.is_unknown() && !arg.is_sensitive() => Value::Unknown,
                    _ => Value::Bool(arg.is_sensitive()),
                });
            }
            _ => {}
        }
        // Functions compute on plain values; their result is as sensitive as what went in,
        // and hides the texts of every secret among the arguments.
        // `length` and `keys` see only the collection's own mark: how many elements, and
        // which keys, a collection of secrets has is not a secret. The conversions keep the
        // marks of the elements where they are, as go-cty's do.
        let mut marks = Marks::default();
        let shallow = matches!(name, "length" | "keys" | "tolist" | "toset" | "tomap");
        let marked = |v: &Value| {
            if shallow {
                v.is_sensitive()
            } else {
                v.contains_sensitive()
            }
        };
        if args.iter().any(marked) {
            marks.0 = Some(args.iter().flat_map(Value::sensitive_fragments).collect());
        }
        let mut args: Vec<Value> = if shallow {
            args.into_iter().map(|v| v.unmark().0).collect()
        } else {
            args.into_iter().map(plain).collect()
        };
        if call.args.expand_final() {
            match args.pop() {
                Some(Value::List(items)) => args.extend(items),
                Some(Value::Unknown) => return Ok(marks.apply(Value::Unknown)),
                Some(other) => {
                    return Err(EvalError::new(
                        arg_exprs.last().and_then(|e| e.span()),
                        "Invalid expanding argument",
                        format!(
                            "The argument after which ... appears must be a list, not {}.",
                            other.type_name()
                        ),
                    ));
                }
                None => {}
            }
        }
        let arg_range = |i: Option<usize>| {
            i.and_then(|i| arg_exprs.get(i.min(arg_exprs.len().saturating_sub(1))))
                .and_then(|e| e.span())
                .or(range.clone())
        };
        let result = match name {
            _ if let Some((_, source)) = &provider => functions::call_provider(source, name, &args),
            _ if FILESYSTEM_FUNCTIONS.contains(&name) => {
                Some(filesystem_call(self.scope, name, &args))
            }
            "templatestring" => Some(template_string(self.scope, &args)),
            // The clock and randomness are read once, when the plan is made, and recorded in
            // it: applying the plan evaluates the same values.
            "timestamp" | "plantimestamp" => Some(no_arguments(name, &args).and_then(|()| {
                impure(self.scope, "timestamp", &mut || {
                    Ok(Value::String(functions::plan_timestamp()))
                })
            })),
            "uuid" => Some(no_arguments(name, &args).and_then(|()| {
                impure(self.scope, &call_site(name, &range), &mut || {
                    Ok(Value::String(uuid::Uuid::new_v4().to_string()))
                })
            })),
            "bcrypt" => Some(impure(self.scope, &call_site(name, &range), &mut || {
                bcrypt_hash(&args)
            })),
            _ => functions::call(name, &args),
        };
        match result {
            Some(Ok(value)) => {
                let value = canonical(value);
                check_size(name, &value, range.as_ref())?;
                self.spend(&value, range.as_ref())?;
                Ok(marks.apply(value))
            }
            Some(Err(err)) => {
                let (summary, detail) = match err.arg {
                    Some(_) => (
                        "Invalid function argument",
                        format!("{shown}(): {}", err.message),
                    ),
                    None => (
                        "Error in function call",
                        format!("Call to function \"{shown}\" failed: {}", err.message),
                    ),
                };
                Err(EvalError::new(arg_range(err.arg), summary, detail))
            }
            None if let Some((local, source)) = &provider => {
                let served = functions::provider_functions(source);
                let detail = if served.is_empty() {
                    format!(
                        "gpustack serves no functions of the provider \"{local}\" ({source}), so there is no function \"{shown}\"."
                    )
                } else {
                    format!(
                        "The provider \"{local}\" ({source}) has no function \"{name}\"; its functions are {}.{}",
                        served.join(", "),
                        suggest(name, served.iter().copied())
                    )
                };
                Err(EvalError::new(
                    call.name.name.span().or(range),
                    "Call to unknown function",
                    detail,
                ))
            }
            None => {
                let mut names: Vec<&str> = functions::names().to_vec();
                names.extend(EVALUATOR_FUNCTIONS);
                names.extend(FILESYSTEM_FUNCTIONS);
                Err(EvalError::new(
                    call.name.name.span().or(range),
                    "Call to unknown function",
                    format!(
                        "There is no function named \"{name}\".{}",
                        suggest(name, names)
                    ),
                ))
            }
        }
    }

    /// The provider of a namespaced call (`provider::NAME::FUNCTION`): its local name and
    /// source; `None` for a built-in function (`NAME`, `core::NAME`). OpenTofu's errors for a
    /// namespace that is neither and for a provider the module does not require.
    fn function_provider(
        &self,
        call: &FuncCall,
        range: Option<Range<usize>>,
    ) -> Result<Option<(String, String)>> {
        let namespace: Vec<&str> = call.name.namespace.iter().map(|n| n.as_str()).collect();
        match namespace.as_slice() {
            // `core::NAME` is the built-in function NAME, as OpenTofu names it.
            [] | ["core"] => Ok(None),
            ["provider", local] => match self.scope.required_provider(local) {
                Some(source) => Ok(Some(((*local).to_owned(), source))),
                None => Err(EvalError::new(
                    range,
                    "Unknown function provider",
                    format!(
                        "Provider \"{local}\" does not exist within the required_providers of this module."
                    ),
                )),
            },
            _ => Err(EvalError::new(
                range,
                "Unknown function namespace",
                format!(
                    "Function \"{}::{}\" does not exist within a valid namespace (provider, core).",
                    namespace.join("::"),
                    call.name.name.as_str()
                ),
            )),
        }
    }

    fn call_try(&mut self, args: &[&Expression], range: Option<Range<usize>>) -> Result<Value> {
        if args.is_empty() {
            return Err(EvalError::new(
                range,
                "Wrong number of arguments",
                "Function \"try\" expects at least 1 argument.",
            ));
        }
        let mut last_error = None;
        for arg in args {
            match self.eval(arg) {
                Ok(v) => return Ok(v),
                Err(err) => last_error = Some(err),
            }
        }
        let detail = last_error.map_or_else(String::new, |e| {
            format!(" The last one failed with: {} {}", e.summary, e.detail)
        });
        Err(EvalError::new(
            range,
            "No result from try",
            format!("None of the arguments of try() produced a value.{detail}"),
        ))
    }
}

enum ForItem {
    Skip,
    Unknown,
    Element(Value),
    Entry(String, Value),
}

fn trimmed(s: &str, start: bool, end: bool) -> &str {
    let s = if start { s.trim_start() } else { s };
    if end { s.trim_end() } else { s }
}

fn strips_end(element: &Element) -> bool {
    match element {
        Element::Interpolation(i) => i.strip.strip_end(),
        Element::Directive(d) => match d.as_ref() {
            Directive::If(d) => d.endif_expr.strip.strip_end(),
            Directive::For(d) => d.endfor_expr.strip.strip_end(),
        },
        Element::Literal(_) => false,
    }
}

fn strips_start(element: &Element) -> bool {
    match element {
        Element::Interpolation(i) => i.strip.strip_start(),
        Element::Directive(d) => match d.as_ref() {
            Directive::If(d) => d.if_expr.strip.strip_start(),
            Directive::For(d) => d.for_expr.strip.strip_start(),
        },
        Element::Literal(_) => false,
    }
}

/// The (key, value) pairs a `for` iterates over; `None` when the collection is unknown.
fn iteration_pairs(
    collection: Value,
    range: Option<Range<usize>>,
) -> Result<Option<Vec<(Value, Value)>>> {
    match collection {
        Value::Unknown => Ok(None),
        Value::List(items) => Ok(Some(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::number(i), v))
                .collect(),
        )),
        Value::Object(mut map) => {
            // Terraform visits a map's keys in lexical order.
            map.sort_unstable_keys();
            Ok(Some(
                map.into_iter()
                    .map(|(k, v)| (Value::String(k), v))
                    .collect(),
            ))
        }
        other => Err(EvalError::new(
            range,
            "Iteration over non-iterable value",
            format!(
                "A for expression needs a list, set, map or object, not {}.",
                describe(&other, false)
            ),
        )),
    }
}

fn get_attr(value: Value, name: &str, range: Option<Range<usize>>) -> Result<Value> {
    match value {
        Value::Unknown => Ok(Value::Unknown),
        Value::Object(mut map) => match map.swap_remove(name) {
            Some(v) => Ok(v),
            None => Err(EvalError::new(
                range,
                "Unsupported attribute",
                format!(
                    "This object has no attribute named \"{name}\".{}",
                    suggest(name, map.keys().map(String::as_str))
                ),
            )),
        },
        Value::Null => Err(EvalError::new(
            range,
            "Attempt to get attribute from null value",
            format!("Cannot read \"{name}\" of a null value."),
        )),
        Value::List(_) => Err(EvalError::new(
            range,
            "Unsupported attribute",
            format!(
                "A list has no attribute \"{name}\"; to read it from every element use a splat: [*].{name}."
            ),
        )),
        other => Err(EvalError::new(
            range,
            "Unsupported attribute",
            format!("A {} has no attributes.", other.type_name()),
        )),
    }
}

/// Text in Unicode normalization form C, as go-cty holds every string.
pub(crate) fn nfc(s: String) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    if s.is_ascii()
        || unicode_normalization::is_nfc_quick(s.chars())
            == unicode_normalization::IsNormalized::Yes
    {
        return s;
    }
    s.nfc().collect()
}

/// A value as go-cty holds it: the keys of every map and object in lexical order.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(mut map) => {
            if !map.keys().is_sorted() {
                map.sort_unstable_keys();
            }
            Value::Object(map.into_iter().map(|(k, v)| (k, canonical(v))).collect())
        }
        Value::List(items)
            if items
                .iter()
                .any(|v| matches!(v.peel(), Value::List(_) | Value::Object(_))) =>
        {
            Value::List(items.into_iter().map(canonical).collect())
        }
        Value::Sensitive(mut m) => {
            m.value = canonical(std::mem::take(&mut m.value));
            Value::Sensitive(m)
        }
        Value::String(s) => Value::String(nfc(s)),
        other => other,
    }
}

fn get_index(value: Value, key: &Value, range: Option<Range<usize>>) -> Result<Value> {
    if key.is_unknown() || value.is_unknown() {
        return Ok(Value::Unknown);
    }
    match value {
        Value::List(mut items) => {
            let index = match Type::Number.convert(key) {
                Ok(Value::Number(n)) if n.to_i64().is_some_and(|i| i >= 0) => {
                    usize::try_from(n.to_i64().unwrap_or(0)).unwrap_or(usize::MAX)
                }
                _ => {
                    return Err(EvalError::new(
                        range,
                        "Invalid index",
                        format!("A list index must be a whole number ≥ 0, not {key}."),
                    ));
                }
            };
            let len = items.len();
            if index >= len {
                return Err(EvalError::new(
                    range,
                    "Invalid index",
                    format!("The index {index} is out of range for a list of {len} element(s)."),
                ));
            }
            Ok(items.swap_remove(index))
        }
        Value::Object(mut map) => {
            let name = match Type::String.convert(key) {
                Ok(Value::String(s)) => s,
                _ => {
                    return Err(EvalError::new(
                        range,
                        "Invalid index",
                        format!("A map key must be a string, not {}.", key.type_name()),
                    ));
                }
            };
            match map.swap_remove(&name) {
                Some(v) => Ok(v),
                None => Err(EvalError::new(
                    range,
                    "Invalid index",
                    format!(
                        "The map has no element for the key \"{name}\".{}",
                        suggest(&name, map.keys().map(String::as_str))
                    ),
                )),
            }
        }
        Value::Null => Err(EvalError::new(
            range,
            "Attempt to index null value",
            "Cannot index a null value.",
        )),
        other => Err(EvalError::new(
            range,
            "Invalid index",
            format!("A {} cannot be indexed.", other.type_name()),
        )),
    }
}

/// Structural equality; `None` when an unknown inside decides it.
fn equal(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Unknown, _) | (_, Value::Unknown) => None,
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            let mut result = Some(true);
            for (p, q) in x.iter().zip(y) {
                match equal(p, q) {
                    Some(false) => return Some(false),
                    None => result = None,
                    Some(true) => {}
                }
            }
            result
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() || x.keys().any(|k| !y.contains_key(k)) {
                return Some(false);
            }
            let mut result = Some(true);
            for (k, p) in x {
                match equal(p, &y[k]) {
                    Some(false) => return Some(false),
                    None => result = None,
                    Some(true) => {}
                }
            }
            result
        }
        _ => Some(a == b),
    }
}

fn describe(value: &Value, secret: bool) -> String {
    match value {
        Value::String(s) if s.chars().count() <= 40 && !secret && !value.is_sensitive() => {
            format!("the string \"{s}\"")
        }
        other if secret => format!("a sensitive {}", other.type_name()),
        other => other.type_name().to_owned(),
    }
}

/// The value without marks; cheap when it has none.
fn plain(value: Value) -> Value {
    if value.contains_sensitive() {
        value.unmark_deep().0
    } else {
        value
    }
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn traversal_range(traversal: &hcl_edit::expr::Traversal, names: usize) -> Option<Range<usize>> {
    let start = traversal.expr.span()?.start;
    let end = if names == 0 {
        traversal.expr.span()?.end
    } else {
        traversal.operators.get(names - 1)?.span()?.end
    };
    Some(start..end)
}

/// `file`, `fileexists` and `templatefile` read files relative to the working directory, as in
/// Terraform; stacks use `"${path.module}/..."` to reach their own files.
/// Functions the evaluator calls itself, outside the pure library: they see expressions
/// rather than values, marks, the clock or randomness.
const EVALUATOR_FUNCTIONS: [&str; 11] = [
    "bcrypt",
    "try",
    "can",
    "convert",
    "sensitive",
    "nonsensitive",
    "issensitive",
    "templatestring",
    "timestamp",
    "plantimestamp",
    "uuid",
];

/// Functions that read files through the scope, which records what a plan read.
const FILESYSTEM_FUNCTIONS: [&str; 11] = [
    "file",
    "fileexists",
    "fileset",
    "templatefile",
    "filebase64",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesha512",
    "filebase64sha256",
    "filebase64sha512",
];

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), functions::CallError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(functions::CallError {
            arg: None,
            message: format!(
                "Function \"{name}\" expects {n} argument(s), got {}.",
                args.len()
            ),
        })
    }
}

/// `bcrypt(string, cost = 10)`: a salted hash, new on every call (so, as with Terraform, a
/// resource attribute set from it changes on every plan), in Go's `$2a$` form.
fn bcrypt_hash(args: &[Value]) -> Result<Value, functions::CallError> {
    use functions::CallError;
    let (text, cost) = match args {
        [Value::String(text)] => (text, 10),
        [Value::String(text), Value::Number(cost)]
            if cost.to_i64().is_some_and(|c| (4..=31).contains(&c)) =>
        {
            (
                text,
                u32::try_from(cost.to_i64().unwrap_or(10)).unwrap_or(10),
            )
        }
        [Value::String(_), cost] => {
            return Err(CallError {
                arg: Some(1),
                message: format!("the cost must be a whole number from 4 to 31, not {cost}."),
            });
        }
        _ => {
            return Err(CallError {
                arg: None,
                message: "Function \"bcrypt\" expects a string and an optional cost.".into(),
            });
        }
    };
    bcrypt::hash_with_result(text, cost)
        .map(|hash| Value::String(hash.format_for_version(bcrypt::Version::TwoA)))
        .map_err(|e| CallError {
            arg: Some(0),
            message: format!("cannot hash: {e}."),
        })
}

/// Where in its file a call is, for the record of an impure call.
fn call_site(name: &str, range: &Option<Range<usize>>) -> String {
    format!("{name}@{}", range.as_ref().map_or(0, |r| r.start))
}

fn impure(
    scope: &dyn Scope,
    site: &str,
    make: &mut dyn FnMut() -> Result<Value, functions::CallError>,
) -> Result<Value, functions::CallError> {
    scope.impure(site, make).map_err(|e| match e {
        ImpureCallError::Call(e) => e,
        scope => functions::CallError {
            arg: None,
            message: scope.to_string(),
        },
    })
}

fn no_arguments(name: &str, args: &[Value]) -> Result<(), functions::CallError> {
    arity(name, args, 0)
}

/// Renders a template read from a file or a string with the given variables, which are the
/// only names it sees (as in Terraform).
fn render_template(
    scope: &dyn Scope,
    text: &str,
    origin: &str,
    vars: &Value,
) -> Result<Value, functions::CallError> {
    use functions::CallError;
    let Value::Object(vars) = vars else {
        return Err(CallError {
            arg: Some(1),
            message: "the variables must be an object, such as { replicas = 10 }.".into(),
        });
    };
    let template = hcl_edit::parser::parse_template(text).map_err(|e| CallError {
        arg: Some(0),
        message: format!(
            "{origin}:{}:{}: {}.",
            e.location().line(),
            e.location().column(),
            e.message()
        ),
    })?;
    let scope = VarsScope(vars, scope);
    let mut evaluator = Evaluator::new(&scope);
    let template = crate::expr::whitespace::prepared(&template, Layout::Lines(None));
    let elements: Vec<&Element> = template.iter().collect();
    budget::in_template(|| evaluator.whole_template(&elements, None)).map_err(|e| CallError {
        arg: Some(0),
        // The limit's own error replaces this one where the stack's expression ends.
        message: if budget::exceeded() {
            e.detail
        } else {
            format!("in {origin}: {} {}", e.summary, e.detail)
        },
    })
}

fn template_string(scope: &dyn Scope, args: &[Value]) -> Result<Value, functions::CallError> {
    arity("templatestring", args, 2)?;
    match &args[0] {
        Value::String(text) => render_template(scope, text, "the template", &args[1]),
        v if !v.is_wholly_known() => Ok(Value::Unknown),
        other => Err(functions::CallError {
            arg: Some(0),
            message: format!("the template must be a string, not {}.", other.type_name()),
        }),
    }
}

/// The files under `base` whose paths relative to it match `pattern` (`*` and `?` within one
/// path segment, `**` across segments, `[...]` and `{a,b}`, as Terraform's doublestar globs),
/// with `/` separators, sorted.
fn fileset(base: &str, pattern: &str) -> Result<Value, functions::CallError> {
    use functions::CallError;
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| CallError {
            arg: Some(1),
            message: format!("invalid pattern \"{pattern}\": {}.", e.kind()),
        })?
        .compile_matcher();
    let root = std::path::Path::new(base);
    let mut found = std::collections::BTreeSet::new();
    let mut dirs = vec![std::path::PathBuf::new()];
    // A directory linked from inside itself is listed once, not until the path is too long.
    let mut listed = HashSet::new();
    while let Some(relative) = dirs.pop() {
        if let Ok(real) = std::fs::canonicalize(root.join(&relative))
            && !listed.insert(real)
        {
            continue;
        }
        if found.len() >= functions::MAX_ELEMENTS {
            return Err(CallError {
                arg: Some(0),
                message: format!("more than {} files match.", functions::MAX_ELEMENTS),
            });
        }
        let entries = match std::fs::read_dir(root.join(&relative)) {
            Ok(entries) => entries,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound && relative.as_os_str().is_empty() =>
            {
                break;
            }
            Err(e) => {
                return Err(CallError {
                    arg: Some(0),
                    message: format!("cannot list \"{}\": {e}.", root.join(&relative).display()),
                });
            }
        };
        for entry in entries.flatten() {
            let path = relative.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let kind = if kind.is_symlink() {
                match std::fs::metadata(entry.path()) {
                    Ok(target) => target.file_type(),
                    Err(_) => continue,
                }
            } else {
                kind
            };
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                let text = path.to_string_lossy().replace('\\', "/");
                if matcher.is_match(&text) {
                    found.insert(text);
                }
            }
        }
    }
    Ok(Value::List(found.into_iter().map(Value::String).collect()))
}

fn filesystem_call(
    scope: &dyn Scope,
    name: &str,
    args: &[Value],
) -> Result<Value, functions::CallError> {
    use functions::CallError;
    let expect = |n: usize| arity(name, args, n);
    if args.iter().any(|a| !a.is_wholly_known()) {
        return Ok(Value::Unknown);
    }
    let path = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(CallError {
            arg: Some(0),
            message: format!("the path must be a string, not {}.", other.type_name()),
        }),
    };
    let read = |p: &str| match scope.read_file(p) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(CallError {
            arg: Some(0),
            message: format!("cannot read \"{p}\": no such file."),
        }),
        Err(e) => Err(CallError {
            arg: Some(0),
            message: e.to_string(),
        }),
    };
    match name {
        "fileexists" => {
            expect(1)?;
            let p = path(&args[0])?;
            let exists = scope
                .read_file(&p)
                .map_err(|e| CallError {
                    arg: Some(0),
                    message: e.to_string(),
                })?
                .is_some();
            Ok(Value::Bool(exists))
        }
        "file" => {
            expect(1)?;
            Ok(Value::String(read(&path(&args[0])?)?))
        }
        "templatefile" => {
            expect(2)?;
            let p = path(&args[0])?;
            let text = read(&p)?;
            render_template(scope, &text, &p, &args[1])
        }
        "fileset" => {
            expect(2)?;
            let pattern = match &args[1] {
                Value::String(s) => s.clone(),
                other => {
                    return Err(CallError {
                        arg: Some(1),
                        message: format!(
                            "the pattern must be a string, not {}.",
                            other.type_name()
                        ),
                    });
                }
            };
            // A listing is recorded like a file's content: apply sees the plan's.
            let base = path(&args[0])?;
            impure(scope, &format!("fileset({base},{pattern})"), &mut || {
                fileset(&base, &pattern)
            })
        }
        // filebase64, filemd5, ...: the string function of the same name after "file", on
        // the file's contents.
        _ => {
            expect(1)?;
            let text = read(&path(&args[0])?)?;
            let hash = name.trim_start_matches("file");
            let hash = if hash == "base64" {
                "base64encode"
            } else {
                hash
            };
            functions::call(hash, &[Value::String(text)]).unwrap_or_else(|| {
                Err(CallError {
                    arg: None,
                    message: format!("no function \"{hash}\" for \"{name}\"."),
                })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TestScope(IndexMap<String, Value>);

    impl Scope for TestScope {
        fn lookup(
            &self,
            names: &[&str],
            range: Option<Range<usize>>,
        ) -> Result<(Cow<'_, Value>, usize)> {
            match names {
                ["var", name, ..] => {
                    self.0
                        .get(*name)
                        .map(|v| (Cow::Borrowed(v), 2))
                        .ok_or_else(|| {
                            EvalError::new(range, "Reference to undeclared input variable", "")
                        })
                }
                _ => Err(EvalError::new(
                    range,
                    "Reference to undeclared resource",
                    "",
                )),
            }
        }
    }

    fn eval(src: &str) -> Result<Value> {
        let scope = TestScope(
            [
                ("n".to_owned(), Value::number(3)),
                ("u".to_owned(), Value::Unknown),
                (
                    "names".to_owned(),
                    Value::List(vec![Value::string("a"), Value::string("b")]),
                ),
                (
                    "instances".to_owned(),
                    Value::Object(
                        [
                            (
                                "a".into(),
                                Value::Object([("id".into(), Value::string("ia"))].into()),
                            ),
                            (
                                "s".into(),
                                Value::Object(
                                    [("id".into(), Value::sensitive(Value::string("secret")))]
                                        .into(),
                                ),
                            ),
                            ("hidden".into(), Value::sensitive(Value::string("key"))),
                        ]
                        .into(),
                    ),
                ),
                (
                    "pools".to_owned(),
                    Value::List(vec![Value::Object(
                        [("name".into(), Value::string("t4"))].into(),
                    )]),
                ),
            ]
            .into(),
        );
        let expr = hcl_edit::parser::parse_expr(src)
            .map_err(|e| EvalError::new(None, "parse", e.to_string()))?;
        Evaluator::new(&scope).eval(&expr)
    }

    #[test]
    fn arithmetic_and_templates() {
        assert_eq!(eval("var.n * 2 + 1").unwrap(), Value::number(7));
        assert_eq!(eval("\"x${var.n}y\"").unwrap(), Value::string("x3y"));
        assert_eq!(
            eval("\"%{ for n in var.names }${n},%{ endfor }\"").unwrap(),
            Value::string("a,b,")
        );
        assert_eq!(
            eval("\"a %{~ if true ~} b %{~ endif ~} c\"").unwrap(),
            Value::string("abc")
        );
    }

    #[test]
    fn a_borrowed_part_reads_as_the_whole_would() {
        assert_eq!(
            eval("var.instances[\"a\"].id").unwrap(),
            Value::string("ia")
        );
        assert_eq!(
            eval("var.instances.a[\"id\"]").unwrap(),
            Value::string("ia")
        );
        assert_eq!(eval("var.pools[0].name").unwrap(), Value::string("t4"));
        assert_eq!(eval("var.pools.0.name").unwrap(), Value::string("t4"));
        assert!(eval("var.instances[1]").is_err());
        assert!(eval("var.instances[\"b\"].id").is_err());
        assert!(eval("var.instances[\"a\"].name").is_err());
        assert!(eval("var.instances[\"s\"].id").unwrap().is_sensitive());
        // A secret key selects a secret.
        assert!(
            eval("var.instances[var.instances.hidden == \"key\" ? \"a\" : \"s\"].id")
                .unwrap()
                .is_sensitive()
        );
        assert_eq!(eval("var.instances[var.u].id").unwrap(), Value::Unknown);
    }

    #[test]
    fn unknowns_propagate() {
        assert_eq!(eval("var.u + 1").unwrap(), Value::Unknown);
        assert_eq!(eval("\"x${var.u}\"").unwrap(), Value::Unknown);
        assert_eq!(eval("var.u ? 1 : 2").unwrap(), Value::Unknown);
        assert_eq!(eval("[for x in var.u : x]").unwrap(), Value::Unknown);
        assert_eq!(eval("var.u.anything[3]").unwrap(), Value::Unknown);
    }

    #[test]
    fn for_expressions_and_splats() {
        assert_eq!(
            eval("[for i, n in var.names : \"${i}${n}\" if n != \"b\"]").unwrap(),
            Value::List(vec![Value::string("0a")])
        );
        assert_eq!(
            eval("{for n in var.names : n => upper(n)}")
                .unwrap()
                .to_string(),
            "{a = \"A\", b = \"B\"}"
        );
        assert_eq!(
            eval("{for n in [\"a\", \"a\"] : n => 1...}")
                .unwrap()
                .to_string(),
            "{a = [1, 1]}"
        );
        assert_eq!(
            eval("var.pools[*].name").unwrap(),
            Value::List(vec![Value::string("t4")])
        );
        assert_eq!(
            eval("var.pools.*.name").unwrap(),
            Value::List(vec![Value::string("t4")])
        );
    }

    #[test]
    fn errors_are_located() {
        let err = eval("var.n + \"x\"").unwrap_err();
        assert_eq!(err.summary, "Invalid operand");
        assert_eq!(err.range, Some(8..11));
        assert!(
            eval("{for n in [\"a\", \"a\"] : n => 1}")
                .unwrap_err()
                .summary
                .contains("Duplicate")
        );
        assert_eq!(eval("var.names[5]").unwrap_err().summary, "Invalid index");
        assert_eq!(
            eval("nosuch(1)").unwrap_err().summary,
            "Call to unknown function"
        );
        assert_eq!(
            eval("var.pools[0].nmae").unwrap_err().detail,
            "This object has no attribute named \"nmae\". Did you mean \"name\"?"
        );
    }

    #[test]
    fn try_can_and_short_circuit() {
        assert_eq!(
            eval("try(var.names[9], \"d\")").unwrap(),
            Value::string("d")
        );
        assert_eq!(eval("can(var.names[9])").unwrap(), Value::Bool(false));
        assert_eq!(eval("false && var.names[9]").unwrap(), Value::Bool(false));
        assert_eq!(
            eval("var.n > 2 ? \"big\" : var.names[9]").unwrap(),
            Value::string("big")
        );
    }

    #[test]
    fn limits_depth_is_one_across_the_templates_an_expression_renders() {
        // Each level renders the template again: a new evaluator whose depth must not start
        // at zero.
        let err = eval(
            r#"templatestring("$${templatestring(t, { t = t })}", { t = "$${templatestring(t, { t = t })}" })"#,
        )
        .unwrap_err();
        assert_eq!(err.summary, "Expression too deeply nested");
        assert!(
            err.detail.contains(&MAX_DEPTH.to_string()),
            "{}",
            err.detail
        );
        // Reported where the stack's expression is, not at a range of the template's text.
        assert_eq!(err.range.map(|r| r.start), Some(0));
    }

    #[test]
    fn limits_stand_where_try_and_can_caught_the_error() {
        let doubling =
            r#"{ t = "$${try(templatestring(t, { t = t }), templatestring(t, { t = t }))}" }"#;
        for src in [
            format!(r#"try(templatestring({doubling}.t, {doubling}), "fallback")"#),
            format!(r#"can(templatestring({doubling}.t, {doubling}))"#),
        ] {
            let err = eval(&src).unwrap_err();
            assert_eq!(err.summary, "Expression too deeply nested", "{src}");
        }
        // The next evaluation starts with a whole budget.
        assert_eq!(eval("1 + 1").unwrap(), Value::number(2));
    }

    #[test]
    fn limits_bound_the_values_an_expression_copies_and_builds() {
        // A megabyte copied a thousand times.
        let err = eval(
            r#"[for s in [join("", [for j in flatten([for z in range(1000) : range(100)]) : "xxxxxxxxxx"])] : [for i in range(1000) : s]]"#,
        )
        .unwrap_err();
        assert_eq!(err.summary, "Expression too large");
        assert!(err.detail.contains("512 MiB"), "{}", err.detail);
        let err = eval(r#"replace(join("", [for i in flatten([for z in range(1000) : range(100)]) : "a"]), "a", join("", [for i in range(1000) : "b"]))"#)
            .unwrap_err();
        assert!(err.detail.contains("longer than 64 MiB"), "{}", err.detail);
        let err = eval(
            r#"join(join("", [for i in flatten([for z in range(1000) : range(100)]) : "s"]), range(1000))"#,
        );
        assert!(err.is_err());
    }

    #[test]
    fn limits_bound_the_values_a_run_builds_across_expressions() {
        // 64 MB built by each, within the limit of one expression.
        let x = "x".repeat(8000);
        let src = format!(r#"length(replace("{x}", "x", "{x}"))"#);
        let within = (MAX_RUN_VALUE_BYTES / 64_000_000) as usize;
        for _ in 0..within {
            assert_eq!(eval(&src).unwrap(), Value::number(64_000_000));
        }
        let err = eval(&src).unwrap_err();
        assert_eq!(err.summary, "Run too large");
        assert!(err.detail.contains("2048 MiB"), "{}", err.detail);
        assert_eq!(err.range.map(|r| r.start), Some(7));
        // Nothing is built: no limit to reach.
        assert_eq!(eval("1 + 1").unwrap(), Value::number(2));
        start_run();
        assert_eq!(eval(&src).unwrap(), Value::number(64_000_000));
    }

    /// A module whose `required_providers` names the kubernetes and helm providers.
    struct RequiringScope;

    impl Scope for RequiringScope {
        fn lookup(
            &self,
            _: &[&str],
            range: Option<Range<usize>>,
        ) -> Result<(Cow<'_, Value>, usize)> {
            Err(EvalError::new(
                range,
                "Reference to undeclared resource",
                "",
            ))
        }

        fn required_provider(&self, name: &str) -> Option<String> {
            match name {
                "kubernetes" | "helm" | "time" => Some(format!("hashicorp/{name}")),
                _ => None,
            }
        }
    }

    fn eval_required(src: &str) -> Result<Value> {
        let expr = hcl_edit::parser::parse_expr(src)
            .map_err(|e| EvalError::new(None, "parse", e.to_string()))?;
        Evaluator::new(&RequiringScope).eval(&expr)
    }

    /// hashicorp/time's functions: the parts of an instant in its own offset (ISO weeks as Go
    /// counts them), of a Unix time in UTC, and a duration in each unit.
    #[test]
    fn the_time_providers_functions_give_what_the_provider_gives() {
        let get = |v: &Value, k: &str| v.as_object().unwrap()[k].clone();
        let t = eval_required("provider::time::rfc3339_parse(\"2023-07-25T23:43:16Z\")").unwrap();
        for (k, n) in [
            ("year", 2023),
            ("year_day", 206),
            ("day", 25),
            ("month", 7),
            ("weekday", 2),
            ("hour", 23),
            ("minute", 43),
            ("second", 16),
            ("unix", 1_690_328_596),
            ("iso_year", 2023),
            ("iso_week", 30),
        ] {
            assert_eq!(get(&t, k), Value::number(n), "{k}");
        }
        assert_eq!(get(&t, "month_name"), Value::string("July"));
        assert_eq!(get(&t, "weekday_name"), Value::string("Tuesday"));
        let t =
            eval_required("provider::time::rfc3339_parse(\"2021-01-03T01:02:03-05:00\")").unwrap();
        assert_eq!(get(&t, "iso_year"), Value::number(2020));
        assert_eq!(get(&t, "iso_week"), Value::number(53));
        assert_eq!(get(&t, "hour"), Value::number(1));
        assert_eq!(get(&t, "unix"), Value::number(1_609_653_723));
        let u = eval_required("provider::time::unix_timestamp_parse(1690328596)").unwrap();
        assert_eq!(get(&u, "rfc3339"), Value::string("2023-07-25T23:43:16Z"));
        assert_eq!(get(&u, "weekday_name"), Value::string("Tuesday"));
        let d = eval_required("provider::time::duration_parse(\"1h30m1.5ms\")").unwrap();
        assert_eq!(get(&d, "minutes").as_number(), Some(90.000_025));
        assert_eq!(get(&d, "milliseconds"), Value::number(5_400_001));
        assert_eq!(get(&d, "nanoseconds"), Value::number(5_400_001_500_000_i64));
        assert!(eval_required("provider::time::rfc3339_parse(\"yesterday\")").is_err());
    }

    fn decode(yaml: &str) -> Result<Value> {
        eval_required(&format!(
            "provider::kubernetes::manifest_decode({})",
            hcl_string(yaml)
        ))
    }

    fn decode_multi(yaml: &str) -> Result<Value> {
        eval_required(&format!(
            "provider::kubernetes::manifest_decode_multi({})",
            hcl_string(yaml)
        ))
    }

    fn hcl_string(text: &str) -> String {
        serde_json::to_string(text)
            .unwrap()
            .replace("${", "$${")
            .replace("%{", "%%{")
    }

    fn json(v: &Value) -> serde_json::Value {
        v.to_json()
    }

    /// As OpenTofu: a provider function is reachable only through a provider the module
    /// requires, and only the `provider` and `core` namespaces exist.
    #[test]
    fn a_provider_function_needs_its_provider_in_required_providers() {
        let err = eval("provider::kubernetes::manifest_decode(\"a\")").unwrap_err();
        assert_eq!(err.summary, "Unknown function provider");
        assert_eq!(
            err.detail,
            "Provider \"kubernetes\" does not exist within the required_providers of this module."
        );
        let err = eval_required("foo::bar(1)").unwrap_err();
        assert_eq!(err.summary, "Unknown function namespace");
        assert!(err.detail.contains("\"foo::bar\""), "{}", err.detail);
        let err = eval_required("provider::kubernetes::manifest_decod(\"a\")").unwrap_err();
        assert_eq!(err.summary, "Call to unknown function");
        assert!(
            err.detail.contains("Did you mean \"manifest_decode\"?")
                || err.detail.contains("manifest_decode"),
            "{}",
            err.detail
        );
        let err = eval_required("provider::helm::manifest_decode(\"a\")").unwrap_err();
        assert!(
            err.detail.contains("no functions of the provider \"helm\""),
            "{}",
            err.detail
        );
        assert_eq!(
            eval_required("core::upper(\"a\")").unwrap(),
            Value::string("A")
        );
    }

    /// One document to one object, with the kubernetes provider's separator (`---` at the
    /// start of a line, not inside a value or an indented block) and Kubernetes' YAML 1.1
    /// reading (timestamps kept as written).
    #[test]
    fn manifest_decode_reads_one_manifest_as_the_kubernetes_provider_does() {
        let yaml = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-configmap\n  labels:\n    test: test---label\n  annotations:\ndata:\n  configfile: |\n    ---\n    test: document\n  enabled: yes\n  replicas: 4\n  since: 2024-01-02\n";
        assert_eq!(
            json(&decode(yaml).unwrap()),
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "test-configmap",
                    "labels": {"test": "test---label"},
                    "annotations": null,
                },
                "data": {
                    "configfile": "---\ntest: document\n",
                    "enabled": true,
                    "replicas": 4,
                    "since": "2024-01-02",
                },
            })
        );
        assert!(
            decode("a: [1")
                .unwrap_err()
                .detail
                .contains("Invalid YAML document")
        );
    }

    #[test]
    fn manifest_decode_refuses_several_documents_an_empty_text_and_what_is_no_manifest() {
        let two = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n";
        let err = decode(two).unwrap_err();
        assert_eq!(err.summary, "Error in function call");
        assert!(
            err.detail.starts_with(
                "Call to function \"provider::kubernetes::manifest_decode\" failed: YAML manifest contains multiple resources"
            ),
            "{}",
            err.detail
        );
        assert!(
            decode("\n# nothing\n")
                .unwrap_err()
                .detail
                .contains("YAML document is empty")
        );
        assert!(
            decode("apiVersion: v1\nmetadata: {}\n")
                .unwrap_err()
                .detail
                .contains("missing field \"kind\"")
        );
        assert!(
            decode("- a\n- b\n")
                .unwrap_err()
                .detail
                .contains("not a mapping")
        );
        assert!(
            eval_required("provider::kubernetes::manifest_decode(null)")
                .unwrap_err()
                .detail
                .contains("must not be null")
        );
        assert_eq!(
            eval_required("provider::kubernetes::manifest_decode(var.u)")
                .unwrap_err()
                .summary,
            "Reference to undeclared resource"
        );
    }

    #[test]
    fn manifest_decode_multi_returns_every_manifest_and_skips_empty_documents() {
        let yaml = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n{}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n";
        let names: Vec<serde_json::Value> = json(&decode_multi(yaml).unwrap())
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [serde_json::json!("a"), serde_json::json!("b")]);
        assert_eq!(decode_multi("").unwrap(), Value::List(vec![]));
        assert!(
            decode_multi("apiVersion: v1\nkind: Namespace\n")
                .unwrap_err()
                .detail
                .contains("missing field \"metadata\"")
        );
    }

    /// Each document of this text expands to about 50 MB, under the 64 MiB a decoded value
    /// may hold; a hundred of them would exhaust memory unless the limit holds for the call.
    #[test]
    fn manifest_decode_multi_counts_its_limits_across_all_documents() {
        let level = |name: char, prev: char| {
            format!(
                "{name}: &{name} [{}]",
                vec![format!("*{prev}"); 8].join(",")
            )
        };
        let document = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\na: &a \"{}\"\n{}\n{}\n{}\n{}\ndata: [*e, *e]\n",
            "x".repeat(4000),
            level('b', 'a'),
            level('c', 'b'),
            level('d', 'c'),
            level('e', 'd'),
        );
        assert_eq!(
            decode_multi(&document)
                .unwrap()
                .as_list()
                .map(<[Value]>::len),
            Some(1)
        );
        let err = decode_multi(&[document.as_str(); 100].join("---\n")).unwrap_err();
        assert!(err.detail.contains("document 2:"), "{}", err.detail);
        assert!(
            err.detail.contains("more than 64 MiB of text"),
            "{}",
            err.detail
        );
    }

    /// The kubernetes provider's own expectations (its acceptance tests): keys sorted, lists
    /// not indented inside a mapping, nulls kept, numbers as written, a list of manifests as
    /// documents each after `---`.
    #[test]
    fn manifest_encode_writes_yaml_as_the_kubernetes_provider_does() {
        let one = r#"provider::kubernetes::manifest_encode({
            apiVersion = "v1"
            kind       = "ConfigMap"
            metadata   = { name = "test", namespace = null }
            data       = { test = "test" }
        })"#;
        assert_eq!(
            eval_required(one).unwrap(),
            Value::string(
                "apiVersion: v1\ndata:\n  test: test\nkind: ConfigMap\nmetadata:\n  name: test\n  namespace: null\n"
            )
        );
        let two = r#"provider::kubernetes::manifest_encode([
            {
              apiVersion = "v1"
              kind       = "ConfigMap"
              metadata   = { name = "test" }
              data       = { test = "test" }
              immutable  = false
            },
            {
              apiVersion = "apps/v1"
              kind       = "DaemonSet"
              metadata = {
                name      = "fluentd"
                namespace = "kube-system"
                labels    = { "k8s-app" = "fluentd-logging" }
              }
              spec = {
                template = {
                  spec = {
                    tolerations = [{ key = "node-role.kubernetes.io/control-plane", operator = "Exists", effect = "NoSchedule" }]
                    containers = [{
                      name      = "fluentd"
                      image     = "quay.io/fluentd_elasticsearch/fluentd:v2.5.2"
                      resources = { limits = { cpu = 1.5, memory = "200Mi" } }
                    }]
                    terminationGracePeriodSeconds = 30
                  }
                }
              }
            },
        ])"#;
        assert_eq!(
            eval_required(two).unwrap(),
            Value::string(
                "---\napiVersion: v1\ndata:\n  test: test\nimmutable: false\nkind: ConfigMap\nmetadata:\n  name: test\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  labels:\n    k8s-app: fluentd-logging\n  name: fluentd\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2\n        name: fluentd\n        resources:\n          limits:\n            cpu: 1.5\n            memory: 200Mi\n      terminationGracePeriodSeconds: 30\n      tolerations:\n      - effect: NoSchedule\n        key: node-role.kubernetes.io/control-plane\n        operator: Exists\n"
            )
        );
    }

    /// What Kubernetes' YAML 1.1 reader would take for something else is quoted, so that the
    /// text decodes to the same object; what is not a manifest is refused.
    #[test]
    fn manifest_encode_round_trips_and_refuses_what_is_not_a_manifest() {
        let manifest = r##"{
            apiVersion = "v1"
            kind       = "ConfigMap"
            metadata   = { name = "a", labels = { "on" = "yes" } }
            data = {
              a = "yes", b = "010", c = "1_000", d = "0b101", e = "1:20", f = "2024-01-02"
              g = "a: b", h = "- x", i = "#x", j = "", k = " x", l = "two\nlines\n", m = "null"
              n = "3.0", o = "x #y", p = "100Mi", q = "*x", r = "{a}"
            }
          }"##;
        let text = eval_required(&format!(
            "provider::kubernetes::manifest_encode({manifest})"
        ))
        .unwrap();
        let Value::String(yaml) = &text else {
            panic!("{text:?}")
        };
        assert!(yaml.contains("a: \"yes\"\n"), "{yaml}");
        assert!(yaml.contains("p: 100Mi\n"), "{yaml}");
        assert_eq!(
            json(&decode(yaml).unwrap()),
            json(&eval_required(manifest).unwrap()),
            "{yaml}"
        );
        for (value, why) in [
            ("\"a\"", "not a manifest"),
            ("[1]", "a manifest is an object"),
            (
                "{ kind = \"ConfigMap\", metadata = {} }",
                "missing field \"apiVersion\"",
            ),
            ("null", "must not be null"),
        ] {
            let err = eval_required(&format!("provider::kubernetes::manifest_encode({value})"))
                .unwrap_err();
            assert!(err.detail.contains(why), "{value}: {}", err.detail);
        }
        let secret = eval_required(
            "provider::kubernetes::manifest_encode({ apiVersion = \"v1\", kind = \"Secret\", metadata = {}, data = { k = sensitive(\"s3cr3t\") } })",
        )
        .unwrap();
        assert!(secret.is_sensitive());
    }
}
