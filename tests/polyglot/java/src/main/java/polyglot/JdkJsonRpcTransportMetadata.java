// SPDX-License-Identifier: Apache-2.0
package polyglot;

import io.a2a.server.TransportMetadata;
import io.a2a.spec.TransportProtocol;

/** The JDK HTTP server of {@link A2AJavaAgent} serves a2a-java's JSON-RPC transport (checked by a2a-java's AgentCardValidator). */
public final class JdkJsonRpcTransportMetadata implements TransportMetadata {
    @Override
    public String getTransportProtocol() {
        return TransportProtocol.JSONRPC.asString();
    }
}
