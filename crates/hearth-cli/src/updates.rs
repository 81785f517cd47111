//! `hearth updates …`: whether the app looks for a newer version of Hearth by itself. The
//! CLI never downloads or installs anything; the app checks (when this says on), offers,
//! and installs only on the user's click.

use crate::args::UpdatesCommand;
use crate::open_options;
use crate::output::{Failure, Out};
use hearth_core::Hearth;

pub fn run(out: &Out, command: UpdatesCommand) -> Result<(), Failure> {
    let hearth = Hearth::open_oneshot(&open_options()?)?;
    let updates = hearth.updates();
    let settings = match command {
        UpdatesCommand::Show => updates.settings()?,
        UpdatesCommand::On => updates.set_check(true)?,
        UpdatesCommand::Off => updates.set_check(false)?,
    };
    if out.json {
        out.print_json(&settings);
        return Ok(());
    }
    let check = match settings.check {
        Some(true) => "on (when the app starts, and once a day)",
        Some(false) => "off",
        None => "not answered yet (the app asks on its first run; it checks nothing until then)",
    };
    let last = settings
        .last_checked_at
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| "never".to_owned());
    println!("automatic update checks: {check}");
    println!("last checked: {last}");
    Ok(())
}
