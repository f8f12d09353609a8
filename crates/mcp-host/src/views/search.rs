//! Searching tools by words: BM25 (k1 = 1.2, b = 0.75) over each tool's
//! name (counted three times), title, description and argument names,
//! split into lowercase words at anything not a letter or digit and at
//! case changes (`getWeather`: get, weather), a plural's `s` dropped.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How many times a tool's name counts against its other text.
const NAME_WEIGHT: usize = 3;

/// The words of `text`.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut words);
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            flush(&mut word, &mut words);
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    flush(&mut word, &mut words);
    words
}

fn flush(word: &mut String, words: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let mut done = std::mem::take(word);
    if done.len() > 3 && done.ends_with('s') && !done.ends_with("ss") {
        done.pop();
    }
    words.push(done);
}

/// The words a tool is found by: its name (weighted), title, description
/// and the names (and descriptions) of its arguments.
fn document(tool: &Map<String, Value>) -> Vec<String> {
    let text = |key: &str| tool.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut all = Vec::new();
    for _ in 0..NAME_WEIGHT {
        all.extend(words(text("name")));
    }
    all.extend(words(text("title")));
    all.extend(words(text("description")));
    let properties = tool
        .get("inputSchema")
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        all.extend(words(name));
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            all.extend(words(description));
        }
    }
    all
}

/// An index of tools by their words.
#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Each tool's name and length in words.
    tools: Vec<(String, usize)>,
    /// For each word, the tools holding it and how often.
    postings: HashMap<String, Vec<(usize, u32)>>,
    average_length: f64,
}

impl SearchIndex {
    /// The index of `tools` (definitions as listed).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a Map<String, Value>>) -> SearchIndex {
        let mut index = SearchIndex::default();
        let mut total = 0;
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let document = document(tool);
            let id = index.tools.len();
            index.tools.push((name.to_owned(), document.len()));
            total += document.len();
            let mut counts: HashMap<String, u32> = HashMap::new();
            for word in document {
                *counts.entry(word).or_default() += 1;
            }
            for (word, count) in counts {
                index.postings.entry(word).or_default().push((id, count));
            }
        }
        index.average_length = total as f64 / index.tools.len().max(1) as f64;
        index
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The `limit` tools that match `query` best, best first, with their
    /// scores; none for a query with no word any tool holds.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(&str, f64)> {
        let count = self.tools.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        let mut asked = words(query);
        asked.sort();
        asked.dedup();
        for word in &asked {
            let Some(postings) = self.postings.get(word) else {
                continue;
            };
            let found = postings.len() as f64;
            let idf = ((count - found + 0.5) / (found + 0.5) + 1.0).ln();
            for (tool, frequency) in postings {
                let frequency = f64::from(*frequency);
                let length = self.tools[*tool].1 as f64;
                let norm = K1 * (1.0 - B + B * length / self.average_length.max(1.0));
                *scores.entry(*tool).or_default() +=
                    idf * frequency * (K1 + 1.0) / (frequency + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.tools[a.0].0.cmp(&self.tools[b.0].0))
        });
        ranked
            .into_iter()
            .take(limit)
            .map(|(tool, score)| (self.tools[tool].0.as_str(), score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_split_at_case_and_punctuation_and_lose_a_plural() {
        assert_eq!(
            words("getWeather for_cities, HTTPServer v2"),
            ["get", "weather", "for", "citie", "httpserver", "v2"]
        );
        assert_eq!(words("address"), ["address"]);
    }

    #[test]
    fn the_tool_whose_words_match_best_comes_first() {
        let tools = [
            json!({"name": "calendar__delete_event", "description": "Delete an event from the calendar"}),
            json!({"name": "calendar__create_event", "description": "Create an event in the calendar"}),
            json!({"name": "email__delete_message", "description": "Delete an email message"}),
            json!({"name": "weather__forecast", "description": "The weather forecast",
                   "inputSchema": {"properties": {"city": {"type": "string"}}}}),
        ];
        let index = SearchIndex::new(tools.iter().filter_map(Value::as_object));
        assert_eq!(index.len(), 4);
        let names = |query: &str| -> Vec<String> {
            index
                .search(query, 2)
                .into_iter()
                .map(|(n, _)| n.to_owned())
                .collect()
        };
        assert_eq!(names("delete calendar events")[0], "calendar__delete_event");
        assert_eq!(names("forecast for a city")[0], "weather__forecast");
        assert!(index.search("nothing matches zzz", 5).is_empty());
    }
}
