//! How the input budget of a model's context window is split between the prompt's zones
//! (000:332–373): plan for a fraction of the advertised window, reserve the output first,
//! cap the memory, retrieved and tools zones; history gets what is left.

use serde::Serialize;

/// Fraction of the advertised window we plan to use (000:332–373).
pub const EFFECTIVE_FRACTION: f64 = 0.86;
/// Output reserve cap; small windows reserve a quarter instead.
pub const OUTPUT_RESERVE: u32 = 4_000;

/// Memory block cap (003:248): at most this many tokens, and at most [`MEMORY_FRACTION`] of
/// the input budget on small windows.
pub const MEMORY_CAP: u32 = 1_000;
pub const MEMORY_FRACTION: f64 = 0.15;
/// Retrieved-context cap, and its share of the input budget on small windows.
pub const RETRIEVED_CAP: u32 = 4_000;
pub const RETRIEVED_FRACTION: f64 = 0.25;
/// Tools-zone cap (the catalog of tools offered to the model), and its share of the input
/// budget on small windows: min(3,000 tokens, 25% of the input budget) (SPEC §3).
pub const TOOLS_CAP: u32 = 3_000;
pub const TOOLS_FRACTION: f64 = 0.25;

/// How the input budget of a window is split (000:332–373): output reserved first, then
/// the caps of the memory and retrieved zones; history gets what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budgets {
    pub window: u32,
    pub output_reserve: u32,
    pub input_budget: u32,
    pub memory: u32,
    pub retrieved: u32,
    /// The most the tools array may take.
    pub tools: u32,
}

impl Budgets {
    pub fn for_window(window: u32) -> Self {
        let effective = effective_window(window);
        let output_reserve = OUTPUT_RESERVE.min(effective / 4);
        let input_budget = effective - output_reserve;
        let share =
            |fraction: f64, cap: u32| ((f64::from(input_budget) * fraction) as u32).min(cap);
        Self {
            window,
            output_reserve,
            input_budget,
            memory: share(MEMORY_FRACTION, MEMORY_CAP),
            retrieved: share(RETRIEVED_FRACTION, RETRIEVED_CAP),
            tools: share(TOOLS_FRACTION, TOOLS_CAP),
        }
    }
}

/// The effective window: the part of the advertised window we plan to use.
pub fn effective_window(window: u32) -> u32 {
    (f64::from(window) * EFFECTIVE_FRACTION) as u32
}
