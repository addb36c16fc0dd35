# Agents in other languages (tests/polyglot, docs/a2a.md "Callees in other languages"): a
# @a2a-js/sdk agent under the Node OpenTelemetry SDK and a Java A2A agent, called by Python callers
# under our plugin through the real collector. Included by the Makefile.
#   polyglot-js    npm ci of tests/polyglot/js (Node.js >= 20 and npm: on the machine)
#   polyglot-java  Maven resolves and compiles tests/polyglot/java (Java 17 and Maven from apt when missing)
#   test-polyglot  their end-to-end tests (tests/polyglot), about 4 min
POLYGLOT := tests/polyglot

.PHONY: polyglot-js polyglot-java test-polyglot

polyglot-js: $(POLYGLOT)/js/node_modules/.installed
$(POLYGLOT)/js/node_modules/.installed: $(POLYGLOT)/js/package.json $(POLYGLOT)/js/package-lock.json
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || \
	  { echo "tests/polyglot needs Node.js >= 20 (@a2a-js/sdk)"; exit 1; }
	cd $(POLYGLOT)/js && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# javac and Maven: on the machine; else Debian's OpenJDK 17 and Maven
polyglot-java: $(POLYGLOT)/java/target/.installed
$(POLYGLOT)/java/target/.installed: $(POLYGLOT)/java/pom.xml $(wildcard $(POLYGLOT)/java/src/main/java/polyglot/*.java)
	@command -v javac >/dev/null && command -v mvn >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; }
	cd $(POLYGLOT)/java && mvn -q -B package
	touch $@

test-polyglot: venv collector polyglot-js polyglot-java
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(PY) -m pytest $(POLYGLOT) -q
