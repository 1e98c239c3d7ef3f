//! Route conditions: a small boolean expression language over request facts, parsed once into a
//! typed tree and evaluated per request.
//!
//! ```text
//! expr    := and ("or" and)*
//! and     := unary ("and" unary)*
//! unary   := "not" unary | compare
//! compare := operand (("==" | "!=" | "<" | "<=" | ">" | ">=") operand
//!                    | "in" list | "not" "in" list)?
//! operand := field | literal | "(" expr ")"
//! list    := "[" (literal ("," literal)* ","?)? "]"
//! literal := 'text' | "text" | integer | true | false
//! field   := language | prompt_tokens | team | profile | classification | stream | model
//! ```
//!
//! Types are checked at parse time: `<`-style comparisons take integers, `==`/`!=` and `in` need
//! both sides of one type, and the whole condition must be boolean. `profile` and
//! `classification` may be absent from a request; then every comparison with them is false
//! except `!=` (and `not in`), which is true. Errors carry the byte offset of the problem.

use std::fmt;

/// A request field a condition can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Language,
    PromptTokens,
    Team,
    Profile,
    Classification,
    Stream,
    Model,
}

impl Field {
    const ALL: [(&'static str, Field); 7] = [
        ("language", Field::Language),
        ("prompt_tokens", Field::PromptTokens),
        ("team", Field::Team),
        ("profile", Field::Profile),
        ("classification", Field::Classification),
        ("stream", Field::Stream),
        ("model", Field::Model),
    ];

    fn ty(self) -> Type {
        match self {
            Field::PromptTokens => Type::Int,
            Field::Stream => Type::Bool,
            _ => Type::Str,
        }
    }
}

/// The request facts a condition is evaluated against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub language: String,
    pub prompt_tokens: u32,
    pub team: String,
    pub profile: Option<String>,
    pub classification: Option<String>,
    pub stream: bool,
    /// The model the client asked for (`auto-router` or an id).
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Str,
    Int,
    Bool,
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Type::Str => "a string",
            Type::Int => "an integer",
            Type::Bool => "a boolean",
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Int(i64),
    Bool(bool),
}

impl Literal {
    fn ty(&self) -> Type {
        match self {
            Literal::Str(_) => Type::Str,
            Literal::Int(_) => Type::Int,
            Literal::Bool(_) => Type::Bool,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Field(Field),
    Lit(Literal),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    In {
        item: Box<Expr>,
        list: Vec<Literal>,
        negated: bool,
    },
}

/// A parsed, type-checked condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    expr: Expr,
}

/// Why a condition does not parse, and where (byte offset into the condition text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for ConditionError {}

/// Deepest nesting accepted (parentheses and `not`), so hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 32;
/// Longest condition accepted, in bytes.
pub const MAX_LEN: usize = 4096;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Int(i64),
    Op(CmpOp),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Str(s) => write!(f, "string '{s}'"),
            Tok::Int(i) => write!(f, "integer {i}"),
            Tok::Op(op) => write!(f, "`{}`", op_text(*op)),
            Tok::LParen => f.write_str("`(`"),
            Tok::RParen => f.write_str("`)`"),
            Tok::LBracket => f.write_str("`[`"),
            Tok::RBracket => f.write_str("`]`"),
            Tok::Comma => f.write_str("`,`"),
            Tok::End => f.write_str("end of condition"),
        }
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, ConditionError> {
    Err(ConditionError {
        offset,
        message: message.into(),
    })
}

fn lex(src: &str) -> Result<Vec<(usize, Tok)>, ConditionError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'(' => out.push((start, Tok::LParen)),
            b')' => out.push((start, Tok::RParen)),
            b'[' => out.push((start, Tok::LBracket)),
            b']' => out.push((start, Tok::RBracket)),
            b',' => out.push((start, Tok::Comma)),
            b'=' | b'!' | b'<' | b'>' => {
                let next_eq = bytes.get(i + 1) == Some(&b'=');
                let op = match (c, next_eq) {
                    (b'=', true) => CmpOp::Eq,
                    (b'!', true) => CmpOp::Ne,
                    (b'<', true) => CmpOp::Le,
                    (b'>', true) => CmpOp::Ge,
                    (b'<', false) => CmpOp::Lt,
                    (b'>', false) => CmpOp::Gt,
                    (b'=', false) => return err(start, "`=` is not an operator; use `==`"),
                    _ => return err(start, "`!` is not an operator; use `!=` or `not`"),
                };
                if next_eq {
                    i += 1;
                }
                out.push((start, Tok::Op(op)));
            }
            b'\'' | b'"' => {
                let quote = c;
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != quote {
                    j += 1;
                }
                if j == bytes.len() {
                    return err(start, "unterminated string");
                }
                // Quotes are ASCII, so both ends are on character boundaries.
                out.push((start, Tok::Str(src[i + 1..j].to_string())));
                i = j;
            }
            b'-' | b'0'..=b'9' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                let text = &src[i..j];
                if text == "-" {
                    return err(start, "`-` must be followed by digits");
                }
                if j < bytes.len() && (bytes[j].is_ascii_alphabetic() || bytes[j] == b'_') {
                    return err(j, "unexpected character after a number");
                }
                let Ok(n) = text.parse::<i64>() else {
                    return err(start, format!("integer `{text}` is out of range"));
                };
                out.push((start, Tok::Int(n)));
                i = j - 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i + 1;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                out.push((start, Tok::Ident(src[i..j].to_string())));
                i = j - 1;
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return err(start, format!("unexpected character `{ch}`"));
            }
        }
        i += 1;
    }
    out.push((src.len(), Tok::End));
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.pos).map_or(&Tok::End, |(_, t)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(0, |(o, _)| *o)
    }

    fn bump(&mut self) -> (usize, Tok) {
        let t = self.toks.get(self.pos).cloned().unwrap_or((0, Tok::End));
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == kw)
    }

    fn descend(&mut self) -> Result<(), ConditionError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(
                self.offset(),
                format!("nested deeper than {MAX_DEPTH} levels"),
            );
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<(usize, Expr), ConditionError> {
        let (start, mut lhs) = self.and()?;
        while self.is_kw("or") {
            let op_at = self.offset();
            self.bump();
            let rhs_start = self.offset();
            let (_, rhs) = self.and()?;
            expect_bool(&lhs, start, "or", op_at)?;
            expect_bool(&rhs, rhs_start, "or", op_at)?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok((start, lhs))
    }

    fn and(&mut self) -> Result<(usize, Expr), ConditionError> {
        let (start, mut lhs) = self.unary()?;
        while self.is_kw("and") {
            let op_at = self.offset();
            self.bump();
            let rhs_start = self.offset();
            let (_, rhs) = self.unary()?;
            expect_bool(&lhs, start, "and", op_at)?;
            expect_bool(&rhs, rhs_start, "and", op_at)?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
        }
        Ok((start, lhs))
    }

    fn unary(&mut self) -> Result<(usize, Expr), ConditionError> {
        if self.is_kw("not") {
            let start = self.offset();
            self.bump();
            self.descend()?;
            let (inner_start, inner) = self.unary()?;
            self.depth -= 1;
            expect_bool(&inner, inner_start, "not", start)?;
            return Ok((start, Expr::Not(Box::new(inner))));
        }
        self.compare()
    }

    fn compare(&mut self) -> Result<(usize, Expr), ConditionError> {
        let (start, lhs) = self.operand()?;
        match self.peek().clone() {
            Tok::Op(op) => {
                let op_at = self.offset();
                self.bump();
                let (rhs_start, rhs) = self.operand()?;
                let (lt, rt) = (type_of(&lhs), type_of(&rhs));
                if lt != rt {
                    return err(
                        rhs_start,
                        format!(
                            "`{}` compares {lt} with {rt}; both sides must be of one type",
                            op_text(op)
                        ),
                    );
                }
                if !matches!(op, CmpOp::Eq | CmpOp::Ne) && lt != Type::Int {
                    return err(op_at, format!("`{}` needs integers, not {lt}", op_text(op)));
                }
                Ok((start, Expr::Cmp(op, Box::new(lhs), Box::new(rhs))))
            }
            Tok::Ident(kw) if kw == "in" || kw == "not" => {
                let negated = kw == "not";
                if negated {
                    self.bump();
                    if !self.is_kw("in") {
                        return err(
                            self.offset(),
                            format!("expected `in`, found {}", self.peek()),
                        );
                    }
                }
                self.bump();
                let list = self.list(type_of(&lhs))?;
                Ok((
                    start,
                    Expr::In {
                        item: Box::new(lhs),
                        list,
                        negated,
                    },
                ))
            }
            _ => Ok((start, lhs)),
        }
    }

    fn list(&mut self, item_ty: Type) -> Result<Vec<Literal>, ConditionError> {
        let (at, t) = self.bump();
        if t != Tok::LBracket {
            return err(at, format!("expected `[` to start a list, found {t}"));
        }
        let mut items = Vec::new();
        loop {
            if *self.peek() == Tok::RBracket {
                self.bump();
                return Ok(items);
            }
            let (at, t) = self.bump();
            let lit = match t {
                Tok::Str(s) => Literal::Str(s),
                Tok::Int(i) => Literal::Int(i),
                Tok::Ident(s) if s == "true" => Literal::Bool(true),
                Tok::Ident(s) if s == "false" => Literal::Bool(false),
                other => return err(at, format!("expected a literal in the list, found {other}")),
            };
            if lit.ty() != item_ty {
                return err(
                    at,
                    format!(
                        "list item is {}, but the value tested is {item_ty}",
                        lit.ty()
                    ),
                );
            }
            items.push(lit);
            let (at, t) = self.bump();
            match t {
                Tok::Comma => {}
                Tok::RBracket => return Ok(items),
                other => return err(at, format!("expected `,` or `]`, found {other}")),
            }
        }
    }

    fn operand(&mut self) -> Result<(usize, Expr), ConditionError> {
        let (at, t) = self.bump();
        let e = match t {
            Tok::LParen => {
                self.descend()?;
                let (_, inner) = self.expr()?;
                self.depth -= 1;
                let (close_at, close) = self.bump();
                if close != Tok::RParen {
                    return err(close_at, format!("expected `)`, found {close}"));
                }
                inner
            }
            Tok::Str(s) => Expr::Lit(Literal::Str(s)),
            Tok::Int(i) => Expr::Lit(Literal::Int(i)),
            Tok::Ident(s) => match s.as_str() {
                "true" => Expr::Lit(Literal::Bool(true)),
                "false" => Expr::Lit(Literal::Bool(false)),
                name => match Field::ALL.iter().find(|(n, _)| *n == name) {
                    Some((_, f)) => Expr::Field(*f),
                    None => {
                        let known: Vec<&str> = Field::ALL.iter().map(|(n, _)| *n).collect();
                        return err(
                            at,
                            format!("unknown field `{name}` (known: {})", known.join(", ")),
                        );
                    }
                },
            },
            Tok::End => return err(at, "unexpected end of condition"),
            other => {
                return err(
                    at,
                    format!("expected a field, a literal or `(`, found {other}"),
                );
            }
        };
        Ok((at, e))
    }
}

fn type_of(e: &Expr) -> Type {
    match e {
        Expr::Field(f) => f.ty(),
        Expr::Lit(l) => l.ty(),
        _ => Type::Bool,
    }
}

fn expect_bool(e: &Expr, at: usize, op: &str, _op_at: usize) -> Result<(), ConditionError> {
    let t = type_of(e);
    if t != Type::Bool {
        return err(at, format!("`{op}` needs booleans, but this is {t}"));
    }
    Ok(())
}

impl Condition {
    /// Parses and type-checks a condition.
    pub fn parse(src: &str) -> Result<Condition, ConditionError> {
        if src.len() > MAX_LEN {
            return err(MAX_LEN, format!("condition longer than {MAX_LEN} bytes"));
        }
        let mut p = Parser {
            toks: lex(src)?,
            pos: 0,
            depth: 0,
        };
        if *p.peek() == Tok::End {
            return err(0, "empty condition");
        }
        let (start, expr) = p.expr()?;
        let (at, t) = p.bump();
        if t != Tok::End {
            return err(at, format!("expected `and`, `or` or the end, found {t}"));
        }
        let ty = type_of(&expr);
        if ty != Type::Bool {
            return err(
                start,
                format!("a condition must be a boolean, but this is {ty}"),
            );
        }
        Ok(Condition { expr })
    }

    /// Whether the facts satisfy the condition.
    pub fn matches(&self, facts: &Facts) -> bool {
        eval_bool(&self.expr, facts)
    }
}

/// A value during evaluation; `Absent` is an unset optional field.
#[derive(Debug, PartialEq)]
enum Value<'a> {
    Str(&'a str),
    Int(i64),
    Bool(bool),
    Absent,
}

fn value<'a>(e: &'a Expr, facts: &'a Facts) -> Value<'a> {
    match e {
        Expr::Field(f) => match f {
            Field::Language => Value::Str(&facts.language),
            Field::PromptTokens => Value::Int(i64::from(facts.prompt_tokens)),
            Field::Team => Value::Str(&facts.team),
            Field::Profile => facts.profile.as_deref().map_or(Value::Absent, Value::Str),
            Field::Classification => facts
                .classification
                .as_deref()
                .map_or(Value::Absent, Value::Str),
            Field::Stream => Value::Bool(facts.stream),
            Field::Model => Value::Str(&facts.model),
        },
        Expr::Lit(Literal::Str(s)) => Value::Str(s),
        Expr::Lit(Literal::Int(i)) => Value::Int(*i),
        Expr::Lit(Literal::Bool(b)) => Value::Bool(*b),
        other => Value::Bool(eval_bool(other, facts)),
    }
}

fn lit_value(l: &Literal) -> Value<'_> {
    match l {
        Literal::Str(s) => Value::Str(s),
        Literal::Int(i) => Value::Int(*i),
        Literal::Bool(b) => Value::Bool(*b),
    }
}

fn eval_bool(e: &Expr, facts: &Facts) -> bool {
    match e {
        Expr::Not(inner) => !eval_bool(inner, facts),
        Expr::And(a, b) => eval_bool(a, facts) && eval_bool(b, facts),
        Expr::Or(a, b) => eval_bool(a, facts) || eval_bool(b, facts),
        Expr::Cmp(op, a, b) => {
            let (l, r) = (value(a, facts), value(b, facts));
            if l == Value::Absent || r == Value::Absent {
                return *op == CmpOp::Ne;
            }
            match op {
                CmpOp::Eq => l == r,
                CmpOp::Ne => l != r,
                _ => match (l, r) {
                    (Value::Int(x), Value::Int(y)) => match op {
                        CmpOp::Lt => x < y,
                        CmpOp::Le => x <= y,
                        CmpOp::Gt => x > y,
                        _ => x >= y,
                    },
                    // Excluded by the type check at parse time.
                    _ => false,
                },
            }
        }
        Expr::In {
            item,
            list,
            negated,
        } => {
            let v = value(item, facts);
            let found = v != Value::Absent && list.iter().any(|l| lit_value(l) == v);
            found != *negated
        }
        Expr::Field(_) | Expr::Lit(_) => value(e, facts) == Value::Bool(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            language: "ar".into(),
            prompt_tokens: 120,
            team: "research".into(),
            profile: Some("cost".into()),
            classification: None,
            stream: true,
            model: "auto-router".into(),
        }
    }

    fn eval(src: &str) -> bool {
        match Condition::parse(src) {
            Ok(c) => c.matches(&facts()),
            Err(e) => panic!("{src}: {e}"),
        }
    }

    fn parse_err(src: &str) -> ConditionError {
        match Condition::parse(src) {
            Ok(c) => panic!("{src} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn comparisons_on_each_field() {
        assert!(eval("language == 'ar'"));
        assert!(eval("language == \"ar\""));
        assert!(!eval("language != 'ar'"));
        assert!(eval("prompt_tokens < 500"));
        assert!(eval("prompt_tokens <= 120"));
        assert!(!eval("prompt_tokens > 120"));
        assert!(eval("prompt_tokens >= 120"));
        assert!(eval("team == 'research'"));
        assert!(eval("profile == 'cost'"));
        assert!(eval("stream == true"));
        assert!(eval("stream"));
        assert!(!eval("not stream"));
        assert!(eval("model == 'auto-router'"));
        assert!(eval("500 > prompt_tokens"));
        assert!(eval("prompt_tokens > -1"));
    }

    #[test]
    fn absent_optional_fields_only_satisfy_not_equal() {
        assert!(!eval("classification == 'public'"));
        assert!(eval("classification != 'public'"));
        assert!(!eval("classification in ['public', 'sensitive']"));
        assert!(eval("classification not in ['public']"));
    }

    #[test]
    fn boolean_operators_and_precedence() {
        // `and` binds tighter than `or`.
        assert!(eval(
            "language == 'en' and prompt_tokens > 1000 or team == 'research'"
        ));
        assert!(!eval(
            "language == 'en' and (prompt_tokens > 1000 or team == 'research')"
        ));
        assert!(eval("not language == 'en'"));
        assert!(eval("not (language == 'en' or stream == false)"));
        assert!(eval("not not stream"));
        assert!(eval("((((language == 'ar'))))"));
    }

    #[test]
    fn membership() {
        assert!(eval("language in ['ar', 'fa', 'ur']"));
        assert!(!eval("language in []"));
        assert!(eval("language not in ['en', 'fr',]"));
        assert!(eval("prompt_tokens in [1, 120]"));
        assert!(eval("stream in [true]"));
    }

    #[test]
    fn keywords_are_case_sensitive_identifiers() {
        let e = parse_err("Language == 'ar'");
        assert_eq!(e.offset, 0);
        assert!(e.message.contains("unknown field `Language`"), "{e}");
    }

    #[test]
    fn errors_point_at_the_problem() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 0, "empty"),
            ("   ", 0, "empty"),
            ("language = 'ar'", 9, "use `==`"),
            ("language == 'ar", 12, "unterminated"),
            ("languag == 'ar'", 0, "unknown field `languag`"),
            ("language == 3", 12, "compares a string with an integer"),
            ("language < 'b'", 9, "needs integers"),
            ("prompt_tokens < 500 and", 23, "unexpected end"),
            ("prompt_tokens", 0, "must be a boolean"),
            ("prompt_tokens and stream", 0, "needs booleans"),
            ("stream or 'x'", 10, "needs booleans"),
            ("not language", 4, "needs booleans"),
            ("(stream", 7, "expected `)`"),
            ("stream)", 6, "expected `and`, `or` or the end"),
            ("language in ['ar', 2]", 19, "list item is an integer"),
            ("language in 'ar'", 12, "expected `[`"),
            ("language in ['ar' 'en']", 18, "expected `,` or `]`"),
            ("language not 'ar'", 13, "expected `in`"),
            ("prompt_tokens < 99999999999999999999", 16, "out of range"),
            ("prompt_tokens < 5x", 17, "after a number"),
            ("language == 'ar' & stream", 17, "unexpected character `&`"),
            ("language ! 'ar'", 9, "`!` is not an operator"),
            ("prompt_tokens < -", 16, "followed by digits"),
        ];
        for (src, offset, text) in cases {
            let e = parse_err(src);
            assert_eq!(e.offset, *offset, "{src}: {e}");
            assert!(e.message.contains(text), "{src}: {e}");
        }
    }

    #[test]
    fn non_ascii_text_is_fine_inside_strings_and_reported_outside() {
        assert!(!eval("team == 'فريق'"));
        let e = parse_err("team == é");
        assert_eq!(e.offset, 8);
        assert!(e.message.contains('é'), "{e}");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}stream{}", "(".repeat(100), ")".repeat(100));
        let e = parse_err(&deep);
        assert!(e.message.contains("nested deeper"), "{e}");
        let nots = format!("{}stream", "not ".repeat(100));
        assert!(parse_err(&nots).message.contains("nested deeper"));
        let ok = format!("{}stream{}", "(".repeat(30), ")".repeat(30));
        assert!(eval(&ok));
    }

    #[test]
    fn overlong_conditions_are_rejected() {
        let long = format!("team == '{}'", "x".repeat(MAX_LEN));
        assert!(parse_err(&long).message.contains("longer than"));
    }
}
