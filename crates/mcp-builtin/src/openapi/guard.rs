//! The SSRF guard: which addresses an outbound request may reach. Unless
//! private networks are allowed, loopback, private (RFC 1918, fc00::/7),
//! link-local (169.254/16 with the cloud metadata address, fe80::/10),
//! unspecified, CGNAT (100.64/10), multicast and reserved addresses are
//! refused, also when written as IPv4-mapped, IPv4-compatible, NAT64 or
//! 6to4 IPv6 addresses. The check runs on literal hosts before a request is
//! sent, in the resolver on every address a name resolves to (so a name
//! pointing at 127.0.0.1 is refused too), and on every redirect hop.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Why an outbound request was refused before it was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Only `http` and `https` are spoken.
    #[error("refused {url}: only http and https URLs are allowed")]
    Scheme {
        /// The URL.
        url: String,
    },
    /// The host is, or resolves only to, an address of a forbidden kind.
    #[error(
        "refused to connect to {host}: {address} is a {kind} address \
         (private networks are reachable only with --allow-private-network)"
    )]
    Address {
        /// The host as written in the URL.
        host: String,
        /// The forbidden address.
        address: IpAddr,
        /// What kind of address it is.
        kind: &'static str,
    },
    /// A redirect chain longer than allowed.
    #[error("refused to follow more than {max} redirects")]
    TooManyRedirects {
        /// The most hops followed.
        max: usize,
    },
    /// A redirect whose `Location` is not a URL.
    #[error("refused a redirect to {location:?}: not a URL")]
    BadLocation {
        /// The header's value.
        location: String,
    },
}

/// The kind of a forbidden address, or `None` for a public one.
pub fn forbidden_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private (RFC 1918)")
    } else if ip.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (CGNAT 100.64.0.0/10)")
    } else if ip.is_broadcast() || ip.is_multicast() || a >= 240 {
        Some("broadcast, multicast or reserved")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("IETF protocol assignment")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    // Forms that carry an IPv4 address: mapped (::ffff:a.b.c.d),
    // compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:ab:cd::).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    if segments[..6].iter().all(|s| *s == 0) {
        return forbidden_v4(embedded_v4(segments[6], segments[7]));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(embedded_v4(segments[6], segments[7]));
    }
    if segments[0] == 0x2002 {
        return forbidden_v4(embedded_v4(segments[1], segments[2]));
    }
    if ip.is_unique_local() {
        Some("unique-local (fc00::/7)")
    } else if ip.is_unicast_link_local() || segments[0] & 0xffc0 == 0xfec0 {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The rule every outbound request follows.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    allow_private: bool,
    allowed: Arc<[IpAddr]>,
}

impl Guard {
    /// Refuses forbidden addresses unless `allow_private`; the addresses of
    /// `allowed` are reachable either way.
    pub fn new(allow_private: bool, allowed: Vec<IpAddr>) -> Guard {
        Guard {
            allow_private,
            allowed: allowed.into(),
        }
    }

    /// Whether `ip`, found for `host`, may be connected to.
    pub fn permits(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        if self.allow_private || self.allowed.contains(&ip) {
            return Ok(());
        }
        match forbidden_kind(ip) {
            None => Ok(()),
            Some(kind) => Err(Refusal::Address {
                host: host.to_owned(),
                address: ip,
                kind,
            }),
        }
    }

    /// Checks a URL before a request to it: the scheme, and the host when
    /// it is an IP address (names are checked by [`GuardedResolver`]).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme {
                url: without_credentials(url),
            });
        }
        let host = url.host_str().unwrap_or_default();
        match url.host() {
            Some(Host::Ipv4(ip)) => self.permits(host, IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.permits(host, IpAddr::V6(ip)),
            Some(Host::Domain(_)) => Ok(()),
            None => Err(Refusal::Scheme {
                url: without_credentials(url),
            }),
        }
    }

    /// Checks one redirect hop: `location` as sent by the server that
    /// answered `current`, after the hops already followed (`previous`,
    /// oldest first). Gives the URL to follow.
    pub fn check_hop(
        &self,
        current: &Url,
        location: &str,
        previous: &[Url],
        max_hops: usize,
    ) -> Result<Url, Refusal> {
        if previous.len() >= max_hops {
            return Err(Refusal::TooManyRedirects { max: max_hops });
        }
        let next = current.join(location).map_err(|_| Refusal::BadLocation {
            location: location.to_owned(),
        })?;
        self.check_url(&next)?;
        Ok(next)
    }
}

/// `url` without a user name or password, for messages.
pub fn without_credentials(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// A resolver that drops the forbidden addresses a name resolves to, and
/// refuses the name when none is left.
#[derive(Debug, Clone)]
pub struct GuardedResolver(pub Guard);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusal = None;
            let mut kept = Vec::with_capacity(found.len());
            for addr in found {
                match guard.permits(&host, addr.ip()) {
                    Ok(()) => kept.push(addr),
                    Err(refused) => refusal = refusal.or(Some(refused)),
                }
            }
            match (kept.is_empty(), refusal) {
                (true, Some(refused)) => Err(Box::new(refused) as _),
                _ => Ok(Box::new(kept.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<&'static str> {
        forbidden_kind(text.parse().unwrap())
    }

    #[test]
    fn private_and_special_addresses_are_forbidden() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "100.127.255.254",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "ff02::1",
        ] {
            assert!(kind(ip).is_some(), "{ip} should be forbidden");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:2800:220:1::",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(kind(ip), None, "{ip} should be allowed");
        }
    }

    #[test]
    fn the_metadata_address_is_refused_as_a_literal_host() {
        let guard = Guard::default();
        let url = Url::parse("http://169.254.169.254/latest/meta-data/").unwrap();
        let refused = guard.check_url(&url).unwrap_err();
        assert!(
            matches!(refused, Refusal::Address { kind, .. } if kind.contains("link-local")),
            "{refused}"
        );
        assert!(refused.to_string().contains("--allow-private-network"));
    }

    #[test]
    fn numeric_and_bracketed_spellings_of_loopback_are_refused() {
        let guard = Guard::default();
        for url in [
            "http://127.0.0.1:8080/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
            "http://0/",
        ] {
            let url = Url::parse(url).unwrap();
            assert!(guard.check_url(&url).is_err(), "{url} should be refused");
        }
        let open = Guard::new(true, Vec::new());
        assert!(
            open.check_url(&Url::parse("http://127.0.0.1/").unwrap())
                .is_ok()
        );
    }

    #[test]
    fn only_http_and_https_are_spoken() {
        let guard = Guard::new(true, Vec::new());
        for url in ["file:///etc/passwd", "ftp://example.com/", "gopher://x/"] {
            let url = Url::parse(url).unwrap();
            assert!(matches!(guard.check_url(&url), Err(Refusal::Scheme { .. })));
        }
    }

    #[test]
    fn every_redirect_hop_is_checked() {
        let guard = Guard::default();
        let start = Url::parse("https://api.example.com/v1/pets").unwrap();
        // A public hop is followed, relative or absolute.
        let next = guard.check_hop(&start, "/v2/pets", &[], 5).unwrap();
        assert_eq!(next.as_str(), "https://api.example.com/v2/pets");
        // The second hop of a chain goes to the metadata address: refused,
        // though the first was allowed.
        let hops = [start.clone()];
        let refused = guard
            .check_hop(&next, "http://169.254.169.254/latest/meta-data/", &hops, 5)
            .unwrap_err();
        assert!(matches!(refused, Refusal::Address { .. }), "{refused}");
        for private in [
            "http://[::1]/",
            "http://10.0.0.7/admin",
            "file:///etc/passwd",
        ] {
            assert!(
                guard.check_hop(&next, private, &hops, 5).is_err(),
                "{private}"
            );
        }
        // The chain is capped.
        let many = vec![start.clone(); 5];
        assert_eq!(
            guard.check_hop(&next, "/v3", &many, 5),
            Err(Refusal::TooManyRedirects { max: 5 })
        );
    }

    #[test]
    fn an_allowed_address_is_reachable_and_its_neighbours_are_not() {
        let guard = Guard::new(false, vec!["127.0.0.1".parse().unwrap()]);
        assert!(guard.permits("x", "127.0.0.1".parse().unwrap()).is_ok());
        assert!(guard.permits("x", "127.0.0.2".parse().unwrap()).is_err());
        assert!(guard.permits("x", "::1".parse().unwrap()).is_err());
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_for_loopback() {
        let resolver = GuardedResolver(Guard::default());
        let refused = match resolver.resolve("localhost".parse().unwrap()).await {
            Err(e) => e.to_string(),
            Ok(addrs) => panic!("localhost resolved to {:?}", addrs.collect::<Vec<_>>()),
        };
        assert!(refused.contains("loopback"), "{refused}");
        let open = GuardedResolver(Guard::new(true, Vec::new()));
        let addrs: Vec<_> = open
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }
}
