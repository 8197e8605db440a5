//! The formats shipped with the compiler, each a `.tdg` file under
//! `grammars/formats/` (see that file's header for its upstream reference).

/// The formats shipped with the compiler: name, file, text.
pub const SHIPPED: &[(&str, &str, &str)] = &[
    (
        "react",
        "grammars/formats/react.tdg",
        include_str!("../../../../grammars/formats/react.tdg"),
    ),
    (
        "hermes",
        "grammars/formats/hermes.tdg",
        include_str!("../../../../grammars/formats/hermes.tdg"),
    ),
    (
        "llama3",
        "grammars/formats/llama3.tdg",
        include_str!("../../../../grammars/formats/llama3.tdg"),
    ),
    (
        "mistral",
        "grammars/formats/mistral.tdg",
        include_str!("../../../../grammars/formats/mistral.tdg"),
    ),
    (
        "json",
        "grammars/formats/json.tdg",
        include_str!("../../../../grammars/formats/json.tdg"),
    ),
    (
        "toolken",
        "grammars/formats/toolken.tdg",
        include_str!("../../../../grammars/formats/toolken.tdg"),
    ),
    (
        "qwen3",
        "grammars/formats/qwen3.tdg",
        include_str!("../../../../grammars/formats/qwen3.tdg"),
    ),
    (
        "qwen3-coder",
        "grammars/formats/qwen3-coder.tdg",
        include_str!("../../../../grammars/formats/qwen3-coder.tdg"),
    ),
    (
        "glm-4.5",
        "grammars/formats/glm-4.5.tdg",
        include_str!("../../../../grammars/formats/glm-4.5.tdg"),
    ),
    (
        "glm-4.7",
        "grammars/formats/glm-4.7.tdg",
        include_str!("../../../../grammars/formats/glm-4.7.tdg"),
    ),
];
