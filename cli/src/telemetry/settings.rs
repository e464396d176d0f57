//! What the environment asks of telemetry, read by one pure function ([`Settings::read`]) so the
//! rules are tested without touching the process environment.

/// Why telemetry cannot start as asked (exit status 2).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum TelemetryError {
    /// A protocol this build does not export with.
    #[error("{0} is '{1}': hookline exports traces over OTLP with http/protobuf only")]
    Protocol(&'static str, String),
    /// An exporter other than OTLP.
    #[error("OTEL_TRACES_EXPORTER is '{0}': hookline exports traces with 'otlp' (or 'none') only")]
    Exporter(String),
    /// The exporter or the subscriber cannot be set up.
    #[error("cannot start tracing: {0}")]
    Setup(String),
    /// `RUST_LOG` is not a filter.
    #[error("RUST_LOG '{0}' is not a log filter: {1}")]
    Logs(String, String),
}

/// The variables that turn traces on when any is set.
pub(crate) const TRACE_VARIABLES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_SAMPLER",
];

/// What to install.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Export traces over OTLP.
    pub(crate) traces: bool,
    /// The service name comes from the environment (else `hookline`).
    pub(crate) service_name_given: bool,
    /// The `RUST_LOG` filter of log lines on stderr, when set.
    pub(crate) logs: Option<String>,
}

impl Settings {
    /// Reads the settings through `var` (the process environment in the binary). Empty values
    /// count as unset.
    ///
    /// # Errors
    /// A protocol other than `http/protobuf`, or an exporter other than `otlp` or `none`.
    pub(crate) fn read(var: impl Fn(&str) -> Option<String>) -> Result<Self, TelemetryError> {
        let get = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let disabled = get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let exporter = get("OTEL_TRACES_EXPORTER");
        let off_by_exporter = match exporter.as_deref().map(str::trim) {
            None | Some("otlp") => false,
            Some("none") => true,
            Some(other) => return Err(TelemetryError::Exporter(other.to_owned())),
        };
        let asked = TRACE_VARIABLES.iter().any(|name| get(name).is_some());
        let traces = asked && !disabled && !off_by_exporter;
        if traces {
            for name in [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ] {
                if let Some(protocol) = get(name) {
                    if protocol.trim() != "http/protobuf" {
                        return Err(TelemetryError::Protocol(name, protocol));
                    }
                }
            }
        }
        let service_name_given = get("OTEL_SERVICE_NAME").is_some()
            || get("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|v| v.contains("service.name="));
        Ok(Self {
            traces,
            service_name_given,
            logs: get("RUST_LOG"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Settings, TelemetryError> {
        Settings::read(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn nothing_set_installs_nothing() {
        let settings = read(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!settings.traces);
        assert_eq!(settings.logs, None);
    }

    #[test]
    fn any_standard_variable_turns_traces_on() {
        for name in TRACE_VARIABLES {
            let settings = read(&[(name, "x")]);
            let on = match *name {
                // A protocol variable is checked as well as counted.
                n if n.ends_with("PROTOCOL") => read(&[(n, "http/protobuf")]),
                _ => settings,
            };
            assert!(on.is_ok_and(|s| s.traces), "{name} turns traces on");
        }
    }

    #[test]
    fn empty_values_count_as_unset() {
        let settings = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]);
        assert!(settings.is_ok_and(|s| !s.traces));
    }

    #[test]
    fn sdk_disabled_or_exporter_none_turns_traces_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert!(read(&[endpoint, off]).is_ok_and(|s| !s.traces), "{off:?}");
        }
    }

    #[test]
    fn grpc_and_json_are_refused_with_the_variable_named() {
        let refused = read(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert_eq!(
            refused,
            Err(TelemetryError::Protocol(
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                "grpc".into()
            ))
        );
        let refused = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]);
        assert!(refused.is_err_and(|e| e.to_string()
            == "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is 'http/json': hookline exports traces over \
                OTLP with http/protobuf only"));
    }

    #[test]
    fn another_exporter_is_refused() {
        let refused = read(&[("OTEL_TRACES_EXPORTER", "zipkin")]);
        assert_eq!(refused, Err(TelemetryError::Exporter("zipkin".into())));
    }

    #[test]
    fn the_service_name_defaults_unless_the_environment_gives_one() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert!(read(&[endpoint]).is_ok_and(|s| !s.service_name_given));
        assert!(read(&[("OTEL_SERVICE_NAME", "gw")]).is_ok_and(|s| s.service_name_given));
        let attributes = ("OTEL_RESOURCE_ATTRIBUTES", "service.name=gw,team=a");
        assert!(read(&[endpoint, attributes]).is_ok_and(|s| s.service_name_given));
    }

    #[test]
    fn rust_log_asks_for_log_lines() {
        let settings = read(&[("RUST_LOG", "hookline=info")]);
        assert!(settings.is_ok_and(|s| s.logs.as_deref() == Some("hookline=info") && !s.traces));
    }
}
