fn main() {
    // Declaring the app's commands makes Tauri generate an `allow-<command>` permission for
    // each, so every window's capability lists exactly the commands it may call.
    let manifest = tauri_build::AppManifest::new().commands(&[
        "get_status",
        "get_shortcut",
        "set_shortcut",
        "toggle_quick_prompt",
        "hide_quick_prompt",
        "show_main_window",
        "chat_status",
        "list_conversations",
        "get_messages",
        "send_message",
        "stop_turn",
        "delete_conversation",
        "open_in_main",
        "regenerate",
        "edit_last_message",
        "list_presets",
        "list_providers",
        "add_provider",
        "remove_provider",
        "test_provider",
        "detect_local_servers",
        "get_slots",
        "set_slots",
        "list_model_info",
        "set_model_info",
        "reset_model_info",
    ]);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        panic!("tauri build step failed: {e:#}");
    }
}
