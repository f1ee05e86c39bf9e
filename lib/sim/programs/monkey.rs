//! `monkey -p PKG`: the launch people script with it.

use super::{guard, Phone};
use crate::sim::shell::Output;

impl Phone {
    pub(super) fn monkey(&self, args: &[String]) -> Output {
        let package = args
            .iter()
            .position(|a| a == "-p")
            .and_then(|i| args.get(i + 1));
        let Some(package) = package else {
            return Output::error("** Error: you must specify a package with -p\n", 1);
        };
        *guard(&self.launching) = Some((
            "act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] flg=0x10200000"
                .to_string(),
            2000,
        ));
        match self.world().launch(package) {
            Ok(()) => Output::ok(
                "Events injected: 1\n## Network stats: elapsed time=4ms (0ms mobile, 0ms wifi, 4ms not connected)\n",
            ),
            Err(_) => Output {
                stdout: b"** No activities found to run, monkey aborted.\n".to_vec(),
                stderr: Vec::new(),
                status: 252,
            },
        }
    }
}
