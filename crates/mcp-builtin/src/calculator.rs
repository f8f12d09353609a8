//! A small arithmetic expression evaluator backing the demo `calculate` tool.
//!
//! The evaluator is a hand-written tokenizer followed by a recursive-descent
//! (precedence climbing) parser that computes the value as it parses. It
//! supports:
//!
//! * numbers: integers, decimals (`3.25`, `.5`, `5.`) and exponent notation
//!   (`1.5e3`, `2E-4`);
//! * binary operators, from loosest to tightest binding: `+ -`, then
//!   `* / %` (`%` is the truncated remainder, with the sign of the dividend),
//!   then `^` (power, right-associative);
//! * unary `+` and `-`, which bind looser than `^` on their right, so
//!   `-2^2 == -4` while `2^-1 == 0.5`;
//! * parentheses, the constants `pi` and `e`;
//! * the one-argument functions `sqrt abs sin cos tan ln log10 exp floor ceil
//!   round`, and `min`/`max`, which take two or more comma-separated arguments.
//!
//! Whitespace is ignored. Input is bounded by [`MAX_EXPRESSION_LEN`] bytes and
//! by [`MAX_DEPTH`] levels of parentheses and function calls; the parser only
//! recurses on those, so hostile input cannot exhaust the stack.
//!
//! Syntax errors always take precedence over evaluation errors: `1/0 +`
//! reports [`CalcError::UnexpectedEnd`], not [`CalcError::DivisionByZero`].
//! Every intermediate value must be finite, so `1/10^400` fails with
//! [`CalcError::NotFinite`] rather than silently yielding `0`.

use std::fmt;

/// Longest accepted expression, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// Deepest accepted nesting of parentheses and function calls.
pub const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated.
///
/// Positions (`pos`) are 0-based byte offsets into the original expression.
#[derive(Debug, Clone, PartialEq)]
pub enum CalcError {
    /// The expression is empty or contains only whitespace.
    Empty,
    /// A character that cannot start any token.
    UnexpectedChar {
        /// The offending character.
        ch: char,
        /// Byte offset of the character.
        pos: usize,
    },
    /// The expression ended where more input was required.
    UnexpectedEnd,
    /// A token that is not allowed at this point of the expression.
    UnexpectedToken {
        /// The token's source text.
        found: String,
        /// Byte offset of the token.
        pos: usize,
    },
    /// A call to a function that does not exist.
    UnknownFunction {
        /// The function name as written.
        name: String,
        /// Byte offset of the name.
        pos: usize,
    },
    /// A name, not followed by `(`, that is not a known constant.
    UnknownConstant {
        /// The name as written.
        name: String,
        /// Byte offset of the name.
        pos: usize,
    },
    /// A known function called with the wrong number of arguments.
    WrongArgCount {
        /// The function name.
        name: String,
        /// The accepted argument count, e.g. `"1"` or `"at least 2"`.
        expected: &'static str,
        /// The number of arguments given.
        found: usize,
        /// Byte offset of the function name.
        pos: usize,
    },
    /// Division or remainder by zero.
    DivisionByZero,
    /// A value overflowed to infinity or was undefined (NaN), e.g. `10^400`
    /// or `sqrt(-1)`.
    NotFinite,
    /// The expression is longer than [`MAX_EXPRESSION_LEN`] bytes.
    TooLong,
    /// Parentheses and function calls are nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for CalcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("expression is empty"),
            Self::UnexpectedChar { ch, pos } => {
                write!(f, "unexpected character '{ch}' at position {pos}")
            }
            Self::UnexpectedEnd => f.write_str("unexpected end of expression"),
            Self::UnexpectedToken { found, pos } => {
                write!(f, "unexpected `{found}` at position {pos}")
            }
            Self::UnknownFunction { name, pos } => {
                write!(f, "unknown function `{name}` at position {pos}")
            }
            Self::UnknownConstant { name, pos } => {
                write!(f, "unknown constant `{name}` at position {pos}")
            }
            Self::WrongArgCount {
                name,
                expected,
                found,
                pos,
            } => write!(
                f,
                "function `{name}` at position {pos} takes {expected} argument(s), got {found}"
            ),
            Self::DivisionByZero => f.write_str("division by zero"),
            Self::NotFinite => {
                f.write_str("result is not a finite number (overflow or undefined operation)")
            }
            Self::TooLong => write!(f, "expression is longer than {MAX_EXPRESSION_LEN} bytes"),
            Self::TooDeep => write!(f, "expression is nested deeper than {MAX_DEPTH} levels"),
        }
    }
}

impl std::error::Error for CalcError {}

/// Evaluates an arithmetic expression such as `2 * (3 + sqrt(16)) ^ 2`.
///
/// See the [module documentation](self) for the accepted grammar. The result
/// is always finite; `-0` is normalised to `0`.
///
/// # Errors
///
/// Returns a [`CalcError`] describing the first syntax error, or, for a
/// syntactically valid expression, the first evaluation error.
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    if expression.len() > MAX_EXPRESSION_LEN {
        return Err(CalcError::TooLong);
    }
    let tokens = tokenize(expression)?;
    if tokens.is_empty() {
        return Err(CalcError::Empty);
    }
    let mut parser = Parser {
        src: expression,
        tokens,
        next: 0,
        depth: 0,
        eval_error: None,
    };
    let value = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(parser.unexpected(token));
    }
    if let Some(err) = parser.eval_error {
        return Err(err);
    }
    Ok(if value == 0.0 { 0.0 } else { value })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number(f64),
    Ident,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    LParen,
    RParen,
    Comma,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

fn skip_digits(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    i
}

fn tokenize(src: &str) -> Result<Vec<Token>, CalcError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let single = match bytes[i] {
            b'+' => Some(Kind::Plus),
            b'-' => Some(Kind::Minus),
            b'*' => Some(Kind::Star),
            b'/' => Some(Kind::Slash),
            b'%' => Some(Kind::Percent),
            b'^' => Some(Kind::Caret),
            b'(' => Some(Kind::LParen),
            b')' => Some(Kind::RParen),
            b',' => Some(Kind::Comma),
            _ => None,
        };
        let kind = if let Some(kind) = single {
            i += 1;
            kind
        } else if bytes[i].is_ascii_digit() || bytes[i] == b'.' {
            let mut end = skip_digits(bytes, i);
            let has_dot = end < bytes.len() && bytes[end] == b'.';
            if has_dot {
                end = skip_digits(bytes, end + 1);
            }
            // A lone `.` without digits on either side is not a number.
            if end - start == usize::from(has_dot) {
                return Err(CalcError::UnexpectedChar {
                    ch: '.',
                    pos: start,
                });
            }
            if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
                let mut exp = end + 1;
                if exp < bytes.len() && (bytes[exp] == b'+' || bytes[exp] == b'-') {
                    exp += 1;
                }
                let exp_end = skip_digits(bytes, exp);
                // Only an exponent if digits follow; otherwise `e` starts a
                // new token (and `2e` is then rejected by the parser).
                if exp_end > exp {
                    end = exp_end;
                }
            }
            i = end;
            let text = &src[start..end];
            let value = text
                .parse::<f64>()
                .map_err(|_| CalcError::UnexpectedToken {
                    found: text.to_owned(),
                    pos: start,
                })?;
            Kind::Number(value)
        } else if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Kind::Ident
        } else {
            // `i` always sits on a char boundary: we only ever advance past
            // ASCII bytes or whole characters.
            let ch = src[i..].chars().next().unwrap_or('\u{FFFD}');
            if ch.is_whitespace() {
                i += ch.len_utf8();
                continue;
            }
            return Err(CalcError::UnexpectedChar { ch, pos: i });
        };
        tokens.push(Token {
            kind,
            start,
            end: i,
        });
    }
    Ok(tokens)
}

/// Function arities: `Some(n)` for exactly `n` arguments, `None` for
/// "two or more".
fn arity(name: &str) -> Option<Option<usize>> {
    match name {
        "sqrt" | "abs" | "sin" | "cos" | "tan" | "ln" | "log10" | "exp" | "floor" | "ceil"
        | "round" => Some(Some(1)),
        "min" | "max" => Some(None),
        _ => None,
    }
}

fn apply(name: &str, args: &[f64]) -> f64 {
    let x = args.first().copied().unwrap_or(f64::NAN);
    match name {
        "sqrt" => x.sqrt(),
        "abs" => x.abs(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "ln" => x.ln(),
        "log10" => x.log10(),
        "exp" => x.exp(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "min" => args.iter().copied().fold(f64::INFINITY, f64::min),
        "max" => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        _ => f64::NAN,
    }
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    next: usize,
    depth: usize,
    /// First evaluation error seen; reported only if parsing succeeds.
    eval_error: Option<CalcError>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).copied()
    }

    fn peek_kind(&self) -> Option<Kind> {
        self.peek().map(|t| t.kind)
    }

    fn bump(&mut self) -> Option<Token> {
        let token = self.peek()?;
        self.next += 1;
        Some(token)
    }

    fn eat(&mut self, kind: Kind) -> bool {
        if self.peek_kind() == Some(kind) {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn text(&self, token: Token) -> &str {
        &self.src[token.start..token.end]
    }

    fn unexpected(&self, token: Token) -> CalcError {
        CalcError::UnexpectedToken {
            found: self.text(token).to_owned(),
            pos: token.start,
        }
    }

    fn expect(&mut self, kind: Kind) -> Result<(), CalcError> {
        match self.bump() {
            Some(token) if token.kind == kind => Ok(()),
            Some(token) => Err(self.unexpected(token)),
            None => Err(CalcError::UnexpectedEnd),
        }
    }

    fn record(&mut self, err: CalcError) {
        if self.eval_error.is_none() {
            self.eval_error = Some(err);
        }
    }

    /// Records [`CalcError::NotFinite`] if `value` is infinite or NaN.
    fn check(&mut self, value: f64) -> f64 {
        if !value.is_finite() {
            self.record(CalcError::NotFinite);
        }
        value
    }

    fn enter(&mut self) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError::TooDeep);
        }
        Ok(())
    }

    /// `expr := term (('+' | '-') term)*`
    fn expr(&mut self) -> Result<f64, CalcError> {
        let mut acc = self.term()?;
        loop {
            if self.eat(Kind::Plus) {
                let rhs = self.term()?;
                acc = self.check(acc + rhs);
            } else if self.eat(Kind::Minus) {
                let rhs = self.term()?;
                acc = self.check(acc - rhs);
            } else {
                return Ok(acc);
            }
        }
    }

    /// `term := power (('*' | '/' | '%') power)*`
    fn term(&mut self) -> Result<f64, CalcError> {
        let mut acc = self.power()?;
        loop {
            if self.eat(Kind::Star) {
                let rhs = self.power()?;
                acc = self.check(acc * rhs);
            } else if self.eat(Kind::Slash) {
                let rhs = self.power()?;
                acc = self.divide(acc, rhs, |a, b| a / b);
            } else if self.eat(Kind::Percent) {
                let rhs = self.power()?;
                acc = self.divide(acc, rhs, |a, b| a % b);
            } else {
                return Ok(acc);
            }
        }
    }

    fn divide(&mut self, lhs: f64, rhs: f64, op: fn(f64, f64) -> f64) -> f64 {
        if rhs == 0.0 {
            self.record(CalcError::DivisionByZero);
            f64::NAN
        } else {
            self.check(op(lhs, rhs))
        }
    }

    /// `power := signed ('^' signed)*`, folded from the right, where
    /// `signed := ('+' | '-')* primary` and a sign covers the whole tower to
    /// its right (`-2^2 == -(2^2)`, `2^-3^2 == 2^(-(3^2))`).
    ///
    /// Iterative rather than recursive, so long sign or power chains cannot
    /// exhaust the stack.
    fn power(&mut self) -> Result<f64, CalcError> {
        let (first_negative, first_base) = self.signed()?;
        let mut rest = Vec::new();
        while self.eat(Kind::Caret) {
            rest.push(self.signed()?);
        }
        let mut exponent: Option<f64> = None;
        for (negative, base) in rest.into_iter().rev() {
            let value = match exponent {
                Some(e) => self.check(base.powf(e)),
                None => base,
            };
            exponent = Some(if negative { -value } else { value });
        }
        let value = match exponent {
            Some(e) => self.check(first_base.powf(e)),
            None => first_base,
        };
        Ok(if first_negative { -value } else { value })
    }

    /// Leading unary signs, then a primary. Returns whether the signs negate.
    fn signed(&mut self) -> Result<(bool, f64), CalcError> {
        let mut negative = false;
        loop {
            if self.eat(Kind::Minus) {
                negative = !negative;
            } else if !self.eat(Kind::Plus) {
                break;
            }
        }
        Ok((negative, self.primary()?))
    }

    /// `primary := number | '(' expr ')' | name | name '(' expr (',' expr)* ')'`
    fn primary(&mut self) -> Result<f64, CalcError> {
        let token = self.bump().ok_or(CalcError::UnexpectedEnd)?;
        match token.kind {
            Kind::Number(value) => Ok(self.check(value)),
            Kind::LParen => {
                self.enter()?;
                let value = self.expr()?;
                self.expect(Kind::RParen)?;
                self.depth -= 1;
                Ok(value)
            }
            Kind::Ident => {
                let name = self.text(token).to_owned();
                if self.peek_kind() == Some(Kind::LParen) {
                    self.call(name, token.start)
                } else {
                    match name.as_str() {
                        "pi" => Ok(std::f64::consts::PI),
                        "e" => Ok(std::f64::consts::E),
                        // A known function used without its argument list.
                        _ if arity(&name).is_some() => Err(match self.peek() {
                            Some(next) => self.unexpected(next),
                            None => CalcError::UnexpectedEnd,
                        }),
                        _ => Err(CalcError::UnknownConstant {
                            name,
                            pos: token.start,
                        }),
                    }
                }
            }
            _ => Err(self.unexpected(token)),
        }
    }

    /// Parses `'(' args ')'` after a function name and applies the function.
    fn call(&mut self, name: String, pos: usize) -> Result<f64, CalcError> {
        let Some(arity) = arity(&name) else {
            return Err(CalcError::UnknownFunction { name, pos });
        };
        self.expect(Kind::LParen)?;
        self.enter()?;
        let mut args = Vec::new();
        if !self.eat(Kind::RParen) {
            loop {
                args.push(self.expr()?);
                if self.eat(Kind::Comma) {
                    continue;
                }
                self.expect(Kind::RParen)?;
                break;
            }
        }
        self.depth -= 1;
        let (ok, expected) = match arity {
            Some(n) => (args.len() == n, "1"),
            None => (args.len() >= 2, "at least 2"),
        };
        if !ok {
            return Err(CalcError::WrongArgCount {
                name,
                expected,
                found: args.len(),
                pos,
            });
        }
        let value = apply(&name, &args);
        Ok(self.check(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str) -> f64 {
        match evaluate(expr) {
            Ok(value) => value,
            Err(err) => panic!("`{expr}` failed: {err}"),
        }
    }

    fn assert_close(expr: &str, expected: f64) {
        let value = eval(expr);
        assert!(
            (value - expected).abs() <= 1e-12 * expected.abs().max(1.0),
            "`{expr}` = {value}, expected {expected}"
        );
    }

    fn err(expr: &str) -> CalcError {
        match evaluate(expr) {
            Ok(value) => panic!("`{expr}` unexpectedly evaluated to {value}"),
            Err(err) => err,
        }
    }

    fn tok_err(found: &str, pos: usize) -> CalcError {
        CalcError::UnexpectedToken {
            found: found.to_owned(),
            pos,
        }
    }

    #[test]
    fn numbers() {
        assert_close("42", 42.0);
        assert_close("3.25", 3.25);
        assert_close(".5", 0.5);
        assert_close("5.", 5.0);
        assert_close("1.5e3", 1500.0);
        assert_close("2E-2", 0.02);
        assert_close("1e+2", 100.0);
        assert_close("007", 7.0);
    }

    #[test]
    fn precedence() {
        assert_close("1 + 2 * 3", 7.0);
        assert_close("(1 + 2) * 3", 9.0);
        assert_close("10 - 4 / 2", 8.0);
        assert_close("7 % 4 + 1", 4.0);
        assert_close("2 * 3 ^ 2", 18.0);
        assert_close("1 + 2 ^ 3 * 2", 17.0);
    }

    #[test]
    fn associativity() {
        assert_close("10 - 4 - 3", 3.0);
        assert_close("100 / 10 / 5", 2.0);
        assert_close("17 % 5 % 3", 2.0);
        assert_close("2 ^ 3 ^ 2", 512.0);
        assert_close("(2 ^ 3) ^ 2", 64.0);
    }

    #[test]
    fn unary() {
        assert_close("-3", -3.0);
        assert_close("+3", 3.0);
        assert_close("--3", 3.0);
        assert_close("-+-3", 3.0);
        assert_close("2 * -3", -6.0);
        assert_close("1 - -1", 2.0);
        assert_close("-(2 + 3)", -5.0);
    }

    #[test]
    fn power() {
        assert_close("-2^2", -4.0);
        assert_close("(-2)^2", 4.0);
        assert_close("2^-1", 0.5);
        assert_close("2^-3^2", 2f64.powi(-9));
        assert_close("-2^-2", -0.25);
        assert_close("4^0.5", 2.0);
        assert_close("0^0", 1.0);
    }

    #[test]
    fn remainder() {
        assert_close("7 % 3", 1.0);
        assert_close("-7 % 3", -1.0);
        assert_close("7.5 % 2", 1.5);
    }

    #[test]
    fn functions() {
        assert_close("sqrt(16)", 4.0);
        assert_close("abs(-3)", 3.0);
        assert_close("sin(0)", 0.0);
        assert_close("sin(pi / 2)", 1.0);
        assert_close("cos(0)", 1.0);
        assert_close("tan(pi / 4)", 1.0);
        assert_close("ln(e)", 1.0);
        assert_close("log10(1000)", 3.0);
        assert_close("exp(0)", 1.0);
        assert_close("floor(-1.5)", -2.0);
        assert_close("ceil(1.2)", 2.0);
        assert_close("round(2.5)", 3.0);
        assert_close("round(-2.5)", -3.0);
        assert_close("min(3, 1, 2)", 1.0);
        assert_close("max(1, 5)", 5.0);
        assert_close("max(1, min(4, 2) * 3)", 6.0);
        assert_close("sqrt(9) + 1", 4.0);
        assert_close("-sqrt(4)^2", -4.0);
    }

    #[test]
    fn constants() {
        assert_close("pi", std::f64::consts::PI);
        assert_close("e", std::f64::consts::E);
        assert_close("2 * pi", std::f64::consts::TAU);
        assert_close("e ^ 2", std::f64::consts::E.powi(2));
    }

    #[test]
    fn whitespace_is_ignored() {
        assert_close("  1 +\t2\n* 3 ", 7.0);
        assert_close("sqrt ( 4 )", 2.0);
        assert_close("1\u{00A0}+\u{3000}1", 2.0);
    }

    #[test]
    fn negative_zero_is_normalised() {
        let value = eval("-0");
        assert_eq!(value, 0.0);
        assert!(value.is_sign_positive());
    }

    #[test]
    fn empty() {
        assert_eq!(err(""), CalcError::Empty);
        assert_eq!(err(" \t\n"), CalcError::Empty);
    }

    #[test]
    fn unexpected_char() {
        assert_eq!(err("1 # 2"), CalcError::UnexpectedChar { ch: '#', pos: 2 });
        assert_eq!(err("1 + é"), CalcError::UnexpectedChar { ch: 'é', pos: 4 });
        assert_eq!(err("é + 1"), CalcError::UnexpectedChar { ch: 'é', pos: 0 });
        assert_eq!(err("2 × 3"), CalcError::UnexpectedChar { ch: '×', pos: 2 });
        assert_eq!(err("1 + ."), CalcError::UnexpectedChar { ch: '.', pos: 4 });
    }

    #[test]
    fn unexpected_end() {
        assert_eq!(err("1 +"), CalcError::UnexpectedEnd);
        assert_eq!(err("-"), CalcError::UnexpectedEnd);
        assert_eq!(err("(1"), CalcError::UnexpectedEnd);
        assert_eq!(err("2 ^"), CalcError::UnexpectedEnd);
        assert_eq!(err("max(1,"), CalcError::UnexpectedEnd);
        assert_eq!(err("sqrt"), CalcError::UnexpectedEnd);
    }

    #[test]
    fn unexpected_token() {
        assert_eq!(err("1 2"), tok_err("2", 2));
        assert_eq!(err("1)"), tok_err(")", 1));
        assert_eq!(err("()"), tok_err(")", 1));
        assert_eq!(err("* 3"), tok_err("*", 0));
        assert_eq!(err("1, 2"), tok_err(",", 1));
        assert_eq!(err("2e"), tok_err("e", 1));
        assert_eq!(err("1.2.3"), tok_err(".3", 3));
        assert_eq!(err("sqrt 4"), tok_err("4", 5));
        assert_eq!(err("(1 2)"), tok_err("2", 3));
    }

    #[test]
    fn unknown_function() {
        assert_eq!(
            err("1 + foo(1)"),
            CalcError::UnknownFunction {
                name: "foo".into(),
                pos: 4
            }
        );
        assert_eq!(
            err("pi(2)"),
            CalcError::UnknownFunction {
                name: "pi".into(),
                pos: 0
            }
        );
    }

    #[test]
    fn unknown_constant() {
        assert_eq!(
            err("1 + abc"),
            CalcError::UnknownConstant {
                name: "abc".into(),
                pos: 4
            }
        );
        assert_eq!(
            err("PI"),
            CalcError::UnknownConstant {
                name: "PI".into(),
                pos: 0
            }
        );
    }

    #[test]
    fn wrong_arg_count() {
        assert_eq!(
            err("sqrt()"),
            CalcError::WrongArgCount {
                name: "sqrt".into(),
                expected: "1",
                found: 0,
                pos: 0
            }
        );
        assert_eq!(
            err("2 * abs(1, 2)"),
            CalcError::WrongArgCount {
                name: "abs".into(),
                expected: "1",
                found: 2,
                pos: 4
            }
        );
        assert_eq!(
            err("min(1)"),
            CalcError::WrongArgCount {
                name: "min".into(),
                expected: "at least 2",
                found: 1,
                pos: 0
            }
        );
    }

    #[test]
    fn division_by_zero() {
        assert_eq!(err("1/0"), CalcError::DivisionByZero);
        assert_eq!(err("5 % 0"), CalcError::DivisionByZero);
        assert_eq!(err("1 / (2 - 2)"), CalcError::DivisionByZero);
        assert_eq!(err("0/0"), CalcError::DivisionByZero);
    }

    #[test]
    fn not_finite() {
        assert_eq!(err("10^400"), CalcError::NotFinite);
        assert_eq!(err("1e400"), CalcError::NotFinite);
        assert_eq!(err("1 / 10^400"), CalcError::NotFinite);
        assert_eq!(err("sqrt(-1)"), CalcError::NotFinite);
        assert_eq!(err("ln(0)"), CalcError::NotFinite);
        assert_eq!(err("0^-1"), CalcError::NotFinite);
        assert_eq!(err("exp(1000)"), CalcError::NotFinite);
        assert_eq!(err("1e308 * 10"), CalcError::NotFinite);
    }

    #[test]
    fn first_evaluation_error_wins() {
        assert_eq!(err("1/0 + 10^400"), CalcError::DivisionByZero);
        assert_eq!(err("10^400 + 1/0"), CalcError::NotFinite);
    }

    #[test]
    fn syntax_errors_take_precedence() {
        assert_eq!(err("1/0 +"), CalcError::UnexpectedEnd);
        assert_eq!(err("10^400 )"), tok_err(")", 7));
    }

    #[test]
    fn too_long() {
        let ok = format!("1{}", "+1".repeat((MAX_EXPRESSION_LEN - 1) / 2));
        assert!(ok.len() <= MAX_EXPRESSION_LEN);
        assert_close(&ok, ok.len().div_ceil(2) as f64);
        let long = format!("{ok}+1");
        assert!(long.len() > MAX_EXPRESSION_LEN);
        assert_eq!(err(&long), CalcError::TooLong);
        assert_eq!(err(&" ".repeat(MAX_EXPRESSION_LEN + 1)), CalcError::TooLong);
    }

    #[test]
    fn nesting_limit() {
        let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert_close(&nested(MAX_DEPTH), 1.0);
        assert_eq!(err(&nested(MAX_DEPTH + 1)), CalcError::TooDeep);
        assert_eq!(err(&"(".repeat(4000)), CalcError::TooDeep);

        let calls = |n: usize| format!("{}4{}", "abs(".repeat(n), ")".repeat(n));
        assert_close(&calls(MAX_DEPTH), 4.0);
        assert_eq!(err(&calls(MAX_DEPTH + 1)), CalcError::TooDeep);

        // Sequential groups do not accumulate depth.
        let flat = vec!["(1)"; 500].join("+");
        assert_close(&flat, 500.0);
    }

    #[test]
    fn long_chains_do_not_recurse() {
        let signs = format!("{}1", "-".repeat(MAX_EXPRESSION_LEN - 1));
        assert_close(&signs, -1.0);
        let tower = format!("{}1", "1^".repeat((MAX_EXPRESSION_LEN - 1) / 2));
        assert_close(&tower, 1.0);
        let mixed = format!("{}2", "2^-".repeat((MAX_EXPRESSION_LEN - 1) / 3));
        assert!(evaluate(&mixed).is_ok());
    }

    #[test]
    fn display_messages() {
        assert_eq!(CalcError::Empty.to_string(), "expression is empty");
        assert_eq!(
            err("1 # 2").to_string(),
            "unexpected character '#' at position 2"
        );
        assert_eq!(err("1 +").to_string(), "unexpected end of expression");
        assert_eq!(err("1 2").to_string(), "unexpected `2` at position 2");
        assert_eq!(
            err("foo(1)").to_string(),
            "unknown function `foo` at position 0"
        );
        assert_eq!(err("x").to_string(), "unknown constant `x` at position 0");
        assert_eq!(
            err("min(1)").to_string(),
            "function `min` at position 0 takes at least 2 argument(s), got 1"
        );
        assert_eq!(err("1/0").to_string(), "division by zero");
        assert!(err("10^400").to_string().contains("not a finite number"));
        assert_eq!(
            CalcError::TooLong.to_string(),
            "expression is longer than 4096 bytes"
        );
        assert_eq!(
            CalcError::TooDeep.to_string(),
            "expression is nested deeper than 64 levels"
        );
        let boxed: Box<dyn std::error::Error> = Box::new(CalcError::NotFinite);
        assert!(!boxed.to_string().is_empty());
    }
}
