//! `getprop`: the build and device properties of an Android 13 emulator.

use std::collections::BTreeMap;

use super::dumpsys::{DENSITY, SDK};
use super::Phone;
use crate::sim::shell::Output;

impl Phone {
    fn props(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("ro.build.version.sdk", SDK.to_string()),
            ("ro.build.version.release", "13".to_string()),
            ("ro.build.version.codename", "REL".to_string()),
            ("ro.build.type", "userdebug".to_string()),
            ("ro.build.id", "TQ3A.230805.001".to_string()),
            (
                "ro.build.fingerprint",
                "droid/sim_x86_64/sim:13/TQ3A.230805.001/1:userdebug/test-keys".to_string(),
            ),
            ("ro.product.brand", "droid".to_string()),
            ("ro.product.manufacturer", "droid".to_string()),
            ("ro.product.model", "droid_sim".to_string()),
            ("ro.product.name", "sim_x86_64".to_string()),
            ("ro.product.device", "sim".to_string()),
            ("ro.product.cpu.abi", "x86_64".to_string()),
            ("ro.product.cpu.abilist", "x86_64,arm64-v8a".to_string()),
            ("ro.build.version.security_patch", "2023-08-05".to_string()),
            ("ro.build.characteristics", "emulator".to_string()),
            ("ro.hardware", "ranchu".to_string()),
            ("ro.boot.serialno", self.serial.clone()),
            ("ro.serialno", self.serial.clone()),
            ("ro.kernel.qemu", "1".to_string()),
            ("ro.sf.lcd_density", DENSITY.to_string()),
            ("sys.boot_completed", "1".to_string()),
            ("persist.sys.locale", "en-US".to_string()),
        ])
    }

    pub(super) fn getprop(&self, args: &[String]) -> Output {
        let props = self.props();
        match args.first() {
            Some(key) => Output::ok(format!(
                "{}\n",
                props.get(key.as_str()).map_or("", String::as_str)
            )),
            None => Output::ok(
                props
                    .iter()
                    .map(|(key, value)| format!("[{key}]: [{value}]\n"))
                    .collect::<String>(),
            ),
        }
    }
}
