//! The conversation at the terminal: lines edited and remembered with
//! rustyline, slash commands (`/help`, `/tools`, `/prompts`, `/new`,
//! `/quit`, and `/PROMPT arg=value` for any prompt of the host), `@uri`
//! to attach a resource, and each turn kept as it ends.

use std::collections::BTreeMap;

use anyhow::Result;
use mcp_host::model::{Message, Part, Speaker};
use mcp_schema::{ContentBlock, Role};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;

use super::ChatArgs;
use super::agent::{Agent, Stopped};
use super::history::Kept;
use super::view::Plain;
use crate::stderr::print_err;

const HELP: &str =
    "Type a message for the model. @URI attaches a resource (e.g. @file:///tmp/notes.txt).
/tools lists the tools, /prompts the prompts; /NAME arg=value uses a prompt;
/new starts a new conversation; /quit (or Ctrl-D) ends. Ctrl-C stops the step running.";

/// Converses until the person ends it.
pub(crate) async fn converse(agent: &mut Agent, mut kept: Kept, args: &ChatArgs) -> Result<()> {
    let mut editor: rustyline::Editor<(), FileHistory> = rustyline::Editor::new()?;
    let history = super::chats_dir().join("history");
    let _ = editor.load_history(&history);
    print_err(&format!(
        "mcp chat: model {}; tools: {}; conversation {} (/help for commands)",
        agent.model_name(),
        agent.tools().len(),
        kept.id
    ));
    if !kept.conversation.messages.is_empty() {
        print_err(&format!(
            "resumed with {} messages",
            kept.conversation.messages.len()
        ));
    }
    let view = Plain::new(true);
    loop {
        let line = match editor.readline("> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => return Err(error.into()),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        let outcome = match line {
            "/quit" | "/exit" => break,
            "/help" => {
                print_err(HELP);
                continue;
            }
            "/tools" => {
                for tool in agent.tools() {
                    let about = tool.description.as_deref().unwrap_or("");
                    print_err(&format!("{}  {}", tool.name, first_line(about)));
                }
                continue;
            }
            "/prompts" => {
                list_prompts(agent).await;
                continue;
            }
            "/new" => {
                kept = kept.fresh();
                agent.conversation.messages.clear();
                print_err(&format!("conversation {}", kept.id));
                continue;
            }
            command if command.starts_with('/') => match use_prompt(agent, command).await {
                Ok(true) => agent.run(None, &view).await,
                Ok(false) => continue,
                Err(error) => {
                    print_err(&format!("{error:#}"));
                    continue;
                }
            },
            text => {
                let (parts, problems) = agent.user_parts(text).await;
                for problem in problems {
                    print_err(&problem);
                }
                agent.ask(parts, args.tool.as_deref(), &view).await
            }
        };
        view.end_line();
        match outcome {
            Ok(turn) if !turn.streamed => println!("{}", turn.answer),
            Ok(_) => {}
            Err(Stopped::Cancelled) => print_err("(stopped)"),
            Err(Stopped::Failed(error)) => print_err(&format!("{error:#}")),
        }
        if let Err(error) = kept.save(&agent.conversation) {
            print_err(&format!("the conversation was not kept: {error:#}"));
        }
    }
    let _ = std::fs::create_dir_all(super::chats_dir());
    let _ = editor.save_history(&history);
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

async fn list_prompts(agent: &Agent) {
    match agent.client().list_all_prompts().await {
        Ok(prompts) => {
            for prompt in prompts {
                let arguments: Vec<String> = prompt
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| {
                        let required = a.required == Some(true);
                        format!("{}={}", a.name, if required { "..." } else { "[...]" })
                    })
                    .collect();
                print_err(&format!("/{} {}", prompt.name, arguments.join(" ")));
            }
        }
        Err(error) => print_err(&format!("the prompts cannot be listed: {error}")),
    }
}

/// `/NAME arg=value ...`: the prompt's messages join the conversation;
/// whether the model should answer now (the last is the person's).
async fn use_prompt(agent: &mut Agent, command: &str) -> Result<bool> {
    let mut words = shlex::split(&command[1..])
        .ok_or_else(|| anyhow::anyhow!("unbalanced quotes in {command:?}"))?
        .into_iter();
    let name = words.next().unwrap_or_default();
    let mut arguments = BTreeMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            anyhow::bail!("{word:?} is not arg=value (/help)");
        };
        arguments.insert(key.to_owned(), value.to_owned());
    }
    let prompt = agent
        .client()
        .get_prompt(&name, arguments)
        .await
        .map_err(|e| {
            anyhow::anyhow!("/{name}: {e} (/prompts lists the prompts, /help the commands)")
        })?;
    let mut last_is_user = false;
    for message in prompt.messages {
        let speaker = match message.role {
            Role::User => Speaker::User,
            Role::Assistant => Speaker::Assistant,
        };
        let text = match message.content {
            ContentBlock::Text(text) => text.text,
            ContentBlock::Resource(resource) => {
                serde_json::to_string(&resource.resource).unwrap_or_default()
            }
            other => serde_json::to_string(&other).unwrap_or_default(),
        };
        print_err(&format!(
            "[{}] {}",
            if speaker == Speaker::User {
                "user"
            } else {
                "assistant"
            },
            first_line(&text)
        ));
        agent.conversation.messages.push(Message {
            speaker,
            parts: vec![Part::Text { text }],
        });
        last_is_user = speaker == Speaker::User;
    }
    Ok(last_is_user)
}
