//! The person at the terminal stands in for what a server may ask of the
//! client: they write the model's reply to a sampling request and fill in
//! elicitation forms. Off a terminal these requests are refused with a
//! clear error.

use std::io::IsTerminal;
use std::sync::Arc;

use mcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitValue, ErrorObject,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

use crate::stderr::{ask_err, print_err};

/// Reads answers from stdin, one question at a time.
#[derive(Clone)]
pub struct Terminal {
    lines: Arc<Mutex<Lines<BufReader<Stdin>>>>,
    interactive: bool,
    refused: Arc<std::sync::Mutex<Option<String>>>,
}

impl Terminal {
    /// The process's terminal (interactive only when stdin and stderr are
    /// terminals).
    pub fn new() -> Self {
        Terminal {
            lines: Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines())),
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            refused: Arc::default(),
        }
    }

    /// What this program refused to ask of the user for the server, if
    /// anything (the server's error that follows is this refusal).
    pub fn refusal(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn refuse(&self, what: &str) -> Result<(), ErrorObject> {
        if self.interactive {
            return Ok(());
        }
        let why = format!(
            "the server asked for {what}, which needs a person at a terminal, and stdin is not one"
        );
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(|| why.clone());
        Err(ErrorObject::internal(why))
    }

    async fn ask(
        &self,
        lines: &mut Lines<BufReader<Stdin>>,
        prompt: &str,
    ) -> Result<String, ErrorObject> {
        ask_err(prompt);
        match lines.next_line().await {
            Ok(Some(line)) => Ok(line.trim_end().to_owned()),
            _ => Err(ErrorObject::internal("stdin closed")),
        }
    }

    /// The person writes the model's reply.
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.refuse("a model reply (sampling)")?;
        let mut lines = self.lines.lock().await;
        print_err("\n-- The server asks for a model reply. Its messages:");
        if let Some(system) = &params.system_prompt {
            print_err(&format!("[system] {system}"));
        }
        for message in &params.messages {
            let text = serde_json::to_string(&message.content).unwrap_or_default();
            print_err(&format!("[{:?}] {text}", message.role));
        }
        let reply = self.ask(&mut lines, "Reply (empty line refuses): ").await?;
        if reply.is_empty() {
            return Err(ErrorObject::internal("the user refused to answer"));
        }
        Ok(CreateMessageResult::assistant_text("human", reply))
    }

    /// The person fills in the form (or visits the URL).
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorObject> {
        self.refuse("user input (elicitation)")?;
        let mut lines = self.lines.lock().await;
        let form = match params {
            ElicitRequestParams::Url(url) => {
                print_err(&format!("\n-- {}\nOpen: {}", url.message, url.url));
                let answer = self
                    .ask(&mut lines, "Press Enter when done, or type `decline`: ")
                    .await?;
                return Ok(if answer == "decline" {
                    ElicitResult::decline()
                } else {
                    ElicitResult::accept(Default::default())
                });
            }
            ElicitRequestParams::Form(form) => form,
        };
        print_err(&format!(
            "\n-- {}\n(type `:decline` or `:cancel` at any field)",
            form.message
        ));
        let schema = serde_json::to_value(&form.requested_schema).unwrap_or_default();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut content = std::collections::BTreeMap::new();
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, property) in &properties {
            loop {
                let prompt = field_prompt(name, property, required.contains(&name.as_str()));
                let answer = self.ask(&mut lines, &prompt).await?;
                match answer.as_str() {
                    ":decline" => return Ok(ElicitResult::decline()),
                    ":cancel" => return Ok(ElicitResult::cancel()),
                    "" if required.contains(&name.as_str())
                        && property.get("default").is_none() =>
                    {
                        print_err(&format!("  {name} is required"));
                        continue;
                    }
                    "" => break,
                    _ => {}
                }
                match field_value(property, &answer) {
                    Ok(value) => {
                        content.insert(name.clone(), value);
                        break;
                    }
                    Err(why) => print_err(&format!("  {why}")),
                }
            }
        }
        Ok(ElicitResult::accept(content))
    }
}

fn field_prompt(name: &str, property: &Value, required: bool) -> String {
    let ty = property["type"].as_str().unwrap_or("string");
    let mut prompt = format!("{name} ({ty}{})", if required { ", required" } else { "" });
    if let Some(description) = property["description"].as_str() {
        prompt.push_str(&format!(" {description}"));
    }
    if let Some(choices) = property["enum"].as_array() {
        let choices: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
        prompt.push_str(&format!(" one of {}", choices.join(", ")));
    }
    if let Some(default) = property.get("default") {
        prompt.push_str(&format!(" [{default}]"));
    }
    prompt.push_str(": ");
    prompt
}

/// The typed value of an answer, or why it does not fit the field.
fn field_value(property: &Value, answer: &str) -> Result<ElicitValue, String> {
    let value = match property["type"].as_str().unwrap_or("string") {
        "boolean" => match answer {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer yes or no".into()),
        },
        "integer" => answer
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".to_owned())?,
        "number" => answer
            .parse::<f64>()
            .map(Value::from)
            .map_err(|_| "a number, please".to_owned())?,
        _ => Value::String(answer.to_owned()),
    };
    if let Some(choices) = property["enum"].as_array()
        && !choices.contains(&value)
    {
        return Err("pick one of the listed values".into());
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_typed_by_the_field() {
        let number = json!({"type": "integer"});
        assert_eq!(field_value(&number, "42"), Ok(ElicitValue::Integer(42)));
        assert!(field_value(&number, "many").is_err());
        let flag = json!({"type": "boolean"});
        assert_eq!(field_value(&flag, "yes"), Ok(ElicitValue::Bool(true)));
        let choice = json!({"type": "string", "enum": ["red", "blue"]});
        assert!(field_value(&choice, "green").is_err());
        assert_eq!(
            field_value(&choice, "red"),
            Ok(ElicitValue::String("red".into()))
        );
    }
}
