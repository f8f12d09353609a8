//! Tables for people: a server's tools (name, arguments with required
//! ones marked `*`, and the first line of the description), and any
//! other listing through [`table`]. On a terminal a table fits its width
//! (the last columns wrap); otherwise lines are as long as their content.

use comfy_table::{ColumnConstraint, ContentArrangement, Table, presets};
use mcp_schema::Tool;
use serde_json::Value;

/// The width of the terminal stdout is, if it is one that tells (and is
/// not absurdly narrow).
pub fn terminal_width() -> Option<u16> {
    console::Term::stdout()
        .size_checked()
        .map(|(_rows, columns)| columns)
        .filter(|columns| *columns >= 20)
}

/// The table of `tools`, fitted to `width` columns when given, with a
/// line break after each line.
pub fn tool_table(tools: &[Tool], width: Option<u16>) -> String {
    let rows = tools.iter().map(|tool| {
        let description = first_line(tool.description.as_deref().or(tool.title.as_deref()));
        vec![
            tool.name.clone(),
            argument_names(tool),
            description.to_owned(),
        ]
    });
    table(&["NAME", "ARGUMENTS", "DESCRIPTION"], rows, width)
}

/// The first line of `text` (empty without one).
pub fn first_line(text: Option<&str>) -> &str {
    text.and_then(|t| t.lines().next()).unwrap_or("")
}

/// A table with `header` over `rows`, fitted to `width` columns when
/// given, with a line break after each line. The first column (names, to
/// be copied) never wraps.
pub fn table(
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
    width: Option<u16>,
) -> String {
    let mut table = Table::new();
    table.load_style(presets::NOTHING).set_header(header);
    for row in rows {
        table.add_row(row);
    }
    match width {
        Some(width) => table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width),
        None => table.set_content_arrangement(ContentArrangement::Disabled),
    };
    let last = table.column_count().saturating_sub(1);
    for (index, column) in table.column_iter_mut().enumerate() {
        column.set_padding((0, if index == last { 0 } else { 2 }));
        if index == 0 {
            // Names stay whole, to be copied; the other columns wrap.
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    let mut text = table.trim_fmt();
    text.push('\n');
    text
}

/// The argument names of a tool, required ones marked with `*`.
pub fn argument_names(tool: &Tool) -> String {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        format!("{k}*")
                    } else {
                        k.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, schema: Value) -> Tool {
        serde_json::from_value(
            json!({"name": name, "description": description, "inputSchema": schema}),
        )
        .unwrap()
    }

    #[test]
    fn the_table_lines_up() {
        let tools = [
            tool("t", "Does things", json!({"type": "object"})),
            tool(
                "longer",
                "Other things\nnot this line",
                json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"]}),
            ),
        ];
        assert_eq!(
            tool_table(&tools, None),
            "NAME    ARGUMENTS  DESCRIPTION\n\
             t                  Does things\n\
             longer  a b*       Other things\n"
        );
    }

    #[test]
    fn a_narrow_terminal_wraps_descriptions_and_a_pipe_keeps_them_whole() {
        let long = "word ".repeat(40);
        let tools = [tool("t", long.trim(), json!({"type": "object"}))];
        let narrow = tool_table(&tools, Some(40));
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
        assert!(narrow.lines().count() > 2, "{narrow}");
        let names = [tool("a_rather_long_tool_name", long.trim(), json!({}))];
        let narrow = tool_table(&names, Some(40));
        assert!(narrow.contains("a_rather_long_tool_name"), "{narrow}");
        let whole = tool_table(&tools, None);
        assert_eq!(whole.lines().count(), 2, "{whole}");
        assert!(whole.contains(long.trim()), "{whole}");
    }

    #[test]
    fn required_arguments_are_marked() {
        let t = tool(
            "t",
            "",
            json!({"type": "object", "properties": {"text": {}, "count": {}, "flag": {}},
                   "required": ["text"]}),
        );
        assert_eq!(argument_names(&t), "count flag text*");
    }
}
