package io.sovereigngateway;

/** Run by {@link SettingsTest} in a child JVM: builds a client from the environment, lists models. */
public final class SettingsProbe {
    private SettingsProbe() {}

    public static void main(String[] args) {
        try {
            SovereignClient client = SovereignClient.builder().baseUrl(args[0]).maxRetries(0).build();
            client.models().list();
            System.out.println("ok");
        } catch (RuntimeException e) {
            System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
