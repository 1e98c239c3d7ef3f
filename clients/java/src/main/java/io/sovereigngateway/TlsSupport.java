package io.sovereigngateway;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Builds an {@link SSLContext} from PEM files: a CA bundle to trust (else the JDK's default
 * trust store) and a client certificate (chain) with its PKCS#8 private key
 * ({@code BEGIN PRIVATE KEY}: EC, RSA or Ed25519) for mutual TLS.
 */
public final class TlsSupport {
    private TlsSupport() {}

    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]*?)-----END \\1-----");

    public static SSLContext sslContext(Path caBundle, Path clientCert, Path clientKey) {
        try {
            TrustManagerFactory tmf = null;
            if (caBundle != null) {
                KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
                trust.load(null, null);
                int i = 0;
                for (Certificate c : certificates(caBundle)) {
                    trust.setCertificateEntry("ca-" + i++, c);
                }
                if (i == 0) {
                    throw new IllegalArgumentException("no certificate in CA bundle " + caBundle);
                }
                tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trust);
            }
            KeyManagerFactory kmf = null;
            if (clientCert != null) {
                if (clientKey == null) {
                    throw new IllegalArgumentException("a client certificate needs its private key");
                }
                List<Certificate> chain = certificates(clientCert);
                if (chain.isEmpty()) {
                    throw new IllegalArgumentException("no certificate in " + clientCert);
                }
                PrivateKey key = privateKey(clientKey);
                char[] pass = new char[0];
                KeyStore ks = KeyStore.getInstance("PKCS12");
                ks.load(null, null);
                ks.setKeyEntry("client", key, pass, chain.toArray(new Certificate[0]));
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(ks, pass);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("TLS setup failed: " + e.getMessage(), e);
        }
    }

    /** Every certificate in a PEM file, in order. */
    public static List<Certificate> certificates(Path pem) throws IOException, GeneralSecurityException {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        List<Certificate> out = new ArrayList<>();
        String text = Files.readString(pem, StandardCharsets.US_ASCII);
        Matcher m = PEM.matcher(text);
        while (m.find()) {
            if (m.group(1).equals("CERTIFICATE")) {
                Collection<? extends Certificate> cs =
                        cf.generateCertificates(new ByteArrayInputStream(der(m.group(2))));
                out.addAll(cs);
            }
        }
        return out;
    }

    /** A PKCS#8 ({@code BEGIN PRIVATE KEY}) private key: EC, RSA or Ed25519. */
    public static PrivateKey privateKey(Path pem) throws IOException, GeneralSecurityException {
        String text = Files.readString(pem, StandardCharsets.US_ASCII);
        Matcher m = PEM.matcher(text);
        while (m.find()) {
            String kind = m.group(1);
            if (kind.equals("PRIVATE KEY")) {
                PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der(m.group(2)));
                GeneralSecurityException last = null;
                for (String alg : new String[] {"EC", "RSA", "Ed25519", "EdDSA"}) {
                    try {
                        return KeyFactory.getInstance(alg).generatePrivate(spec);
                    } catch (GeneralSecurityException e) {
                        last = e;
                    }
                }
                throw new GeneralSecurityException("unsupported PKCS#8 key in " + pem, last);
            }
            if (kind.endsWith("PRIVATE KEY")) {
                throw new GeneralSecurityException(pem + " holds a \"" + kind + "\"; convert it to PKCS#8: "
                        + "openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.pk8.pem");
            }
        }
        throw new GeneralSecurityException("no private key in " + pem);
    }

    private static byte[] der(String base64) {
        return Base64.getMimeDecoder().decode(base64.replaceAll("\\s", ""));
    }
}
