//! What model calls cost and what a run may spend: each call's tokens, as its provider reports
//! them, priced from a table (per model, input and output per million tokens; the providers'
//! common models built in, any model's price set in user_config.db as `price.<model>` =
//! `"INPUT,OUTPUT"`), and the budget (`--max-cost`, `--max-model-calls`) that stops the model
//! part or the run.

use crate::config::{self, Settings};

/// Built-in prices, in US dollars per million tokens (input, output): the providers' list
/// prices for their common models. A model not here has no price until one is set.
pub const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1", 2.00, 8.00),
    ("gemini-2.5-flash", 0.30, 2.50),
    ("gemini-2.5-flash-lite", 0.10, 0.40),
    ("gemini-2.5-pro", 1.25, 10.00),
    ("gemini-2.0-flash", 0.10, 0.40),
    ("google/gemini-2.5-flash", 0.30, 2.50),
    ("google/gemini-2.5-pro", 1.25, 10.00),
    ("openai/gpt-4o-mini", 0.15, 0.60),
    ("openai/gpt-4o", 2.50, 10.00),
];

/// A model's price per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    /// The price of `model`: the `price.<model>` setting (user_config.db, else the
    /// environment), else the built-in table, else none (a local model, one not listed).
    pub fn of(model: &str, settings: &mut Settings) -> Result<Option<Price>, config::Error> {
        let key = format!("price.{model}");
        if let Some(value) = settings.plain(&key, None)? {
            return Price::parse(&value)
                .map(Some)
                .ok_or(config::Error::BadValue {
                    key,
                    value,
                    kind: config::ValueType::String,
                });
        }
        Ok(PRICES
            .iter()
            .find(|(name, _, _)| *name == model)
            .map(|&(_, input, output)| Price { input, output }))
    }

    /// `"INPUT,OUTPUT"` per million tokens.
    pub fn parse(text: &str) -> Option<Price> {
        let (input, output) = text.split_once(',')?;
        let number = |t: &str| t.trim().parse::<f64>().ok().filter(|n| *n >= 0.0);
        Some(Price {
            input: number(input)?,
            output: number(output)?,
        })
    }

    /// What a call with these tokens costs.
    pub fn cost(&self, tokens_in: u64, tokens_out: u64) -> f64 {
        (tokens_in as f64 * self.input + tokens_out as f64 * self.output) / 1_000_000.0
    }
}

/// What happens once the budget is spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OnBudget {
    /// The model is asked no more; the heuristic decides the rest of the run.
    #[default]
    Model,
    /// The run ends.
    Run,
}

/// What the model part of a run may spend.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// In the price table's currency.
    pub max_cost: Option<f64>,
    pub max_calls: Option<u64>,
    pub on_spent: OnBudget,
}

/// What the run's model calls spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub calls: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of the priced calls (a call without a price or without tokens adds nothing).
    pub cost: f64,
}

impl Spent {
    /// Takes in one call: its cost, when its model has a price and the provider reported its
    /// tokens.
    pub fn add(
        &mut self,
        price: Option<Price>,
        tokens_in: Option<u64>,
        tokens_out: Option<u64>,
    ) -> Option<f64> {
        self.calls += 1;
        self.tokens_in += tokens_in.unwrap_or(0);
        self.tokens_out += tokens_out.unwrap_or(0);
        let reported = tokens_in.is_some() || tokens_out.is_some();
        let cost = price
            .filter(|_| reported)
            .map(|p| p.cost(tokens_in.unwrap_or(0), tokens_out.unwrap_or(0)));
        self.cost += cost.unwrap_or(0.0);
        cost
    }
}

impl Budget {
    /// Why no more model calls may be made after `spent`, if none may.
    pub fn spent(&self, spent: &Spent) -> Option<String> {
        if let Some(max) = self.max_calls.filter(|max| spent.calls >= *max) {
            return Some(format!(
                "{} model calls made (--max-model-calls {max})",
                spent.calls
            ));
        }
        self.max_cost.filter(|max| spent.cost >= *max).map(|max| {
            format!(
                "{} spent on model calls (--max-cost {})",
                format_cost(spent.cost),
                format_cost(max)
            )
        })
    }
}

/// An amount as people read it: four decimals, enough for a cheap model's single call.
pub fn format_cost(cost: f64) -> String {
    format!("{cost:.4}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_costs_its_tokens_at_the_models_price() {
        let price = Price {
            input: 0.15,
            output: 0.60,
        };
        assert!((price.cost(1_000_000, 0) - 0.15).abs() < 1e-12);
        assert!((price.cost(2000, 500) - 0.0006).abs() < 1e-12);
        let mut spent = Spent::default();
        assert_eq!(spent.add(None, Some(10), Some(5)), None);
        assert_eq!(spent.add(Some(price), None, None), None);
        assert!(spent.add(Some(price), Some(2000), Some(500)).is_some());
        assert_eq!(
            (spent.calls, spent.tokens_in, spent.tokens_out),
            (3, 2010, 505)
        );
        assert!((spent.cost - 0.0006).abs() < 1e-12);
    }

    #[test]
    fn prices_parse_and_settings_override_the_table() {
        assert_eq!(
            Price::parse(" 1.5 , 3 "),
            Some(Price {
                input: 1.5,
                output: 3.0
            })
        );
        assert_eq!(Price::parse("1.5"), None);
        assert_eq!(Price::parse("-1,2"), None);
        let mut settings = Settings::new(None, [("PRICE.GPT-4O-MINI".to_string(), "1,2".into())]);
        assert_eq!(
            Price::of("gpt-4o-mini", &mut settings).unwrap(),
            Some(Price {
                input: 1.0,
                output: 2.0
            })
        );
        let mut none = Settings::new(None, Vec::<(String, String)>::new());
        assert_eq!(
            Price::of("gpt-4o", &mut none).unwrap(),
            Some(Price {
                input: 2.5,
                output: 10.0
            })
        );
        assert_eq!(Price::of("llava", &mut none).unwrap(), None);
    }

    #[test]
    fn the_budget_is_spent_at_its_calls_or_its_cost() {
        let budget = Budget {
            max_cost: Some(0.01),
            max_calls: Some(3),
            on_spent: OnBudget::Model,
        };
        let mut spent = Spent {
            calls: 2,
            cost: 0.009,
            ..Spent::default()
        };
        assert_eq!(budget.spent(&spent), None);
        spent.cost = 0.01;
        assert!(budget.spent(&spent).unwrap().contains("--max-cost 0.0100"));
        spent.cost = 0.0;
        spent.calls = 3;
        assert!(budget
            .spent(&spent)
            .unwrap()
            .contains("--max-model-calls 3"));
    }
}
