//! `wm size`, `wm density`.

use super::dumpsys::DENSITY;
use super::Phone;
use crate::sim::shell::Output;

impl Phone {
    pub(super) fn wm(&self, args: &[String]) -> Output {
        let (width, height) = self.screen_size();
        match args.first().map(String::as_str) {
            Some("size") if args.len() == 1 => {
                Output::ok(format!("Physical size: {width}x{height}\n"))
            }
            Some("density") if args.len() == 1 => {
                Output::ok(format!("Physical density: {DENSITY}\n"))
            }
            Some("size" | "density") => {
                Output::error("Error: changing the display is not simulated\n", 255)
            }
            _ => Output::error("Error: unknown command\n", 255),
        }
    }
}
