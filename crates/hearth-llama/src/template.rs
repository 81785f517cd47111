//! The chat template a GGUF carries (`tokenizer.chat_template`, Jinja), rendered as
//! llama.cpp's own server does: `messages`, `tools`, `add_generation_prompt`, `bos_token`,
//! `eos_token`, Python's string methods (`.strip()`, `.startswith()`, …), `raise_exception`
//! and `strftime_now`. llama.cpp's `llama_chat_apply_template` only knows a built-in list of
//! templates and cannot render tools, so this is the one path. A template is data from a
//! file: its rendering is bounded by fuel, and an error in it is an error, never a panic.

use minijinja::{Environment, Error, ErrorKind, Value, context};
use serde::Serialize;

/// The template when a GGUF carries none: ChatML, which most small instruct models use.
pub const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Instructions a template may run while rendering one prompt: a template is a GGUF's data,
/// and one that loops forever must fail, not hang the worker.
const FUEL: u64 = 5_000_000;

/// One message as templates expect it.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateMessage {
    pub role: String,
    pub content: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A chat template ready to render.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

/// Why a template could not be used.
#[derive(Debug, thiserror::Error)]
#[error("the model's chat template {0}")]
pub struct TemplateError(String);

impl ChatTemplate {
    /// Compiles `source` (the GGUF's template, or [`CHATML`]).
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |format: String| -> String {
            jiff::Zoned::now().strftime(&format).to_string()
        });
        env.add_template_owned("chat", source.to_owned())
            .map_err(|e| TemplateError(format!("does not compile: {e}")))?;
        Ok(Self {
            env,
            bos: bos.to_owned(),
            eos: eos.to_owned(),
        })
    }

    /// The prompt for `messages` (and `tools`, in the OpenAI shape, when the template
    /// renders them), ending where the assistant's answer begins.
    pub fn render(
        &self,
        messages: &[TemplateMessage],
        tools: &[serde_json::Value],
    ) -> Result<String, TemplateError> {
        let tmpl = self
            .env
            .get_template("chat")
            .map_err(|e| TemplateError(format!("is missing: {e}")))?;
        let tools = if tools.is_empty() {
            Value::UNDEFINED
        } else {
            Value::from(minijinja::value::Serde(tools))
        };
        tmpl.render(context! {
            messages => Value::from(minijinja::value::Serde(messages)),
            tools => tools,
            add_generation_prompt => true,
            bos_token => self.bos.clone(),
            eos_token => self.eos.clone(),
        })
        .map_err(|e| TemplateError(format!("failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: &str) -> TemplateMessage {
        TemplateMessage {
            role: role.into(),
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn chatml_renders_each_message_and_opens_the_answer() {
        let t = ChatTemplate::new(CHATML, "", "<|im_end|>").unwrap();
        let out = t
            .render(&[msg("system", "Be brief."), msg("user", "Hi")], &[])
            .unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn python_string_methods_and_tools_render_as_qwen_templates_use_them() {
        let src = "{% if tools %}{% for t in tools %}{{ t.function.name | tojson }}{% endfor %}{% endif %}{% for m in messages %}[{{ m.role }}:{{ m.content.strip() }}]{% endfor %}";
        let t = ChatTemplate::new(src, "", "").unwrap();
        let tools = [serde_json::json!({"type": "function", "function": {"name": "read_file"}})];
        let out = t.render(&[msg("user", "  hello  ")], &tools).unwrap();
        assert_eq!(out, "\"read_file\"[user:hello]");
    }

    #[test]
    fn a_template_that_raises_or_loops_forever_is_an_error() {
        let raising = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        let e = raising.render(&[msg("user", "x")], &[]).unwrap_err();
        assert!(e.to_string().contains("no system role"), "{e}");
        let looping = ChatTemplate::new(
            "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
            "",
            "",
        )
        .unwrap();
        assert!(looping.render(&[msg("user", "x")], &[]).is_err());
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
    }
}
