//! `screencap`: the display as PNG or in the raw format.

use std::sync::atomic::Ordering;

use super::Phone;
use crate::sim::render;
use crate::sim::shell::{lock, FsHandle, Output};

/// Raw `screencap`: width, height, format (1 = RGBA_8888), colour space (1 = sRGB), pixels.
fn raw_screencap(image: &image::RgbaImage) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + image.as_raw().len());
    for value in [image.width(), image.height(), 1, 1] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(image.as_raw());
    out
}

impl Phone {
    pub(super) fn screencap(&self, args: &[String], fs: &FsHandle) -> Output {
        let mut png = false;
        let mut file = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-p" => png = true,
                "-d" => {
                    iter.next();
                }
                "-h" => {
                    return Output::error(
                        "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save the file as a png.\n   -d: specify the display ID to capture (default: 0)\nIf FILENAME ends with .png it will be saved as a png.\nIf FILENAME is not given, the results will be printed to stdout.\n",
                        0,
                    )
                }
                other => file = Some(other.to_string()),
            }
        }
        if file.as_deref().is_some_and(|f| f.ends_with(".png")) {
            png = true;
        }
        let image = if self.screen_on.load(Ordering::SeqCst) {
            self.world().screenshot()
        } else {
            let (width, height) = self.screen_size();
            render::black(width, height)
        };
        let bytes = if png {
            render::png(&image)
        } else {
            raw_screencap(&image)
        };
        match file {
            None => Output::ok(bytes),
            Some(path) => match lock(fs).write(&path, &bytes, false) {
                Ok(()) => Output::default(),
                Err(err) => Output::error(format!("Error opening file: {path} ({err})\n"), 1),
            },
        }
    }
}
