//! Payments through providers behind one trait ([`provider::Provider`]): YooKassa for
//! roubles, Stripe for other currencies, and the `test` provider for development. A
//! participant's checkout opens a payment at the provider ([`checkout`]); the provider's
//! notifications are authenticated and fed to the one payment function every payment passes
//! ([`notifications`]); refunds asked for anywhere are executed, recorded and retried by the
//! worker ([`worker`]).

pub mod accounts;
pub mod checkout;
pub mod credentials;
pub mod notifications;
pub mod provider;
pub mod stripe;
pub mod test_provider;
pub mod worker;
pub mod yookassa;

use domain::config::{Config, Mode, PaymentsConfig};
use domain::events::checkout::{Configured, ProviderKind};
use provider::Provider;
use std::sync::Arc;
use std::time::Duration;
use storage::Database;
use test_provider::TestProvider;

/// The installation's providers and what it does with them.
#[derive(Clone)]
pub struct Payments {
    db: Database,
    client: reqwest::Client,
    settings: Arc<PaymentsConfig>,
    sealer: Option<credentials::Sealer>,
    test: Option<Arc<TestProvider>>,
    yookassa: Option<Arc<dyn Provider>>,
    stripe: Option<Arc<dyn Provider>>,
    public_url: String,
}

impl Payments {
    /// The providers `config` has keys for (the test provider outside production only).
    pub fn from_config(config: &Config, db: Database) -> Payments {
        let p = &config.payments;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_millis(p.timeout_ms.max(100)))
            .build()
            .unwrap_or_default();
        let test = (config.mode != Mode::Production).then(|| {
            let secret = config
                .auth
                .service_secret
                .as_ref()
                .map(|s| s.expose().as_bytes().to_vec())
                .unwrap_or_default();
            Arc::new(TestProvider::new(&secret, &config.http.public_url))
        });
        let yookassa = p
            .yookassa_secret_key
            .clone()
            .filter(|_| !p.yookassa_shop_id.trim().is_empty())
            .map(|key| {
                Arc::new(yookassa::YooKassa::new(
                    client.clone(),
                    p,
                    &p.yookassa_shop_id,
                    key,
                )) as Arc<dyn Provider>
            });
        let stripe = p.stripe_secret_key.clone().map(|key| {
            let webhook = p.stripe_webhook_secret.clone();
            Arc::new(stripe::Stripe::new(client.clone(), p, key, webhook)) as Arc<dyn Provider>
        });
        Payments {
            db,
            client,
            settings: Arc::new(p.clone()),
            sealer: p
                .credentials_key
                .as_ref()
                .map(|k| credentials::Sealer::new(k.expose())),
            test,
            yookassa,
            stripe,
            public_url: config.http.public_url.trim_end_matches('/').to_string(),
        }
    }

    /// The provider of `kind`, when the installation has it.
    pub fn provider(&self, kind: ProviderKind) -> Option<Arc<dyn Provider>> {
        match kind {
            ProviderKind::Test => self.test.clone().map(|t| t as Arc<dyn Provider>),
            ProviderKind::YooKassa => self.yookassa.clone(),
            ProviderKind::Stripe => self.stripe.clone(),
        }
    }

    /// The test provider, outside production.
    pub fn test_provider(&self) -> Option<&TestProvider> {
        self.test.as_deref()
    }

    fn configured(&self) -> Configured {
        Configured {
            yookassa: self.yookassa.is_some(),
            stripe: self.stripe.is_some(),
            test: self.test.is_some(),
        }
    }
}
