//! PKCE (RFC 7636, S256 only) and the random `state` of a request.

pub(crate) use crate::common::random_token;
use crate::common::sha256_base64url;

/// A PKCE verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub(crate) fn new() -> Pkce {
        let verifier = random_token();
        let challenge = sha256_base64url(&verifier);
        Pkce {
            verifier,
            challenge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_hash_of_the_verifier() {
        let pkce = Pkce::new();
        assert_eq!(pkce.challenge, sha256_base64url(&pkce.verifier));
        assert_eq!(pkce.verifier.len(), 43);
        assert_ne!(pkce.verifier, Pkce::new().verifier);
    }
}
