#ifndef CLIBSSL_H
#define CLIBSSL_H
// A thin shim over OpenSSL's libssl, for the TLS side of the MQTT relay (Sources/StepFleet/MQTTRelay.swift):
// plain functions whose names say what they do, opaque handles, and the macros (SSL_set_tlsext_host_name,
// SSL_CTX_set_mode, ...) as functions Swift can call. No logic: what to verify and when is Swift's. libssl is
// loaded on first use (dlopen), not linked: only a daemon that publishes over mqtts:// needs it, and that one
// has it mapped already, since libmosquitto links it.
#include <stddef.h>

typedef struct clibssl_context clibssl_context;
typedef struct clibssl_connection clibssl_connection;

/// What a TLS call did, from SSL_get_error.
enum {
    CLIBSSL_DONE = 0,
    /// Call again once the socket is readable, or writable.
    CLIBSSL_WANT_READ = 1,
    CLIBSSL_WANT_WRITE = 2,
    /// The peer closed the TLS session (close_notify).
    CLIBSSL_CLOSED = 3,
    /// A protocol or system error: clibssl_failure says which.
    CLIBSSL_FAILED = 4,
};

/// Loads libssl.so.3 (once per process). 0 on success; -1 when it cannot be loaded (clibssl_load_failure says why).
int clibssl_library_init(void);
const char *clibssl_load_failure(void);

/// A client context that verifies the peer's certificate (SSL_VERIFY_PEER), TLS 1.2 or later, writes that may be
/// partial and from a buffer that moves. NULL when out of memory.
clibssl_context *clibssl_context_new(void);
void clibssl_context_free(clibssl_context *context);
/// The certificate authorities to trust: `ca_file`'s (PEM), or with NULL the system's (OpenSSL's default paths).
/// 1 on success.
int clibssl_context_trust(clibssl_context *context, const char *ca_file);
/// A client certificate (PEM, with its chain) and its private key (PEM), checked to match. 1 on success.
int clibssl_context_use_certificate(clibssl_context *context, const char *cert_file, const char *key_file);

/// A TLS connection over the connected socket `descriptor` (not taken over: the caller closes it).
clibssl_connection *clibssl_connection_new(clibssl_context *context, int descriptor);
void clibssl_connection_free(clibssl_connection *connection);
/// The certificate must be for this DNS name (SSL_set1_host), which is also sent as SNI. 1 on success.
int clibssl_expect_host_name(clibssl_connection *connection, const char *name);
/// The certificate must be for this IP address, as text (X509_VERIFY_PARAM_set1_ip_asc). 1 on success.
int clibssl_expect_ip_address(clibssl_connection *connection, const char *address);

/// SSL_connect, one step: a CLIBSSL_ value.
int clibssl_handshake(clibssl_connection *connection);
/// SSL_read / SSL_write: a CLIBSSL_ value; `*transferred` receives the bytes read or written on CLIBSSL_DONE.
int clibssl_read(clibssl_connection *connection, void *buffer, int length, int *transferred);
int clibssl_write(clibssl_connection *connection, const void *buffer, int length, int *transferred);
/// Sends close_notify, once, without waiting for the peer's.
void clibssl_shutdown(clibssl_connection *connection);

/// The certificate check's result (SSL_get_verify_result): 0 when it passed or was not reached.
long clibssl_verify_result(clibssl_connection *connection);
/// X509_verify_cert_error_string: a verify result in words ("unable to get local issuer certificate").
const char *clibssl_verify_words(long result);
/// X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: the certificate is not for the expected peer.
long clibssl_verify_hostname_mismatch(void);
long clibssl_verify_ip_address_mismatch(void);
/// The oldest error on this thread's OpenSSL error queue in words (its reason, e.g. "wrong version number"),
/// or "" when there is none; the queue is then cleared.
void clibssl_failure(char *text, size_t size);

#endif
