// Typings of the licore SDK for roblox-ts. The module is Luau (src/init.luau); these mirror its
// exported types. Calls that return two values return a LuaTuple: `const [data, reason] = ...`.

declare namespace Licore {
	/** Why a call returned nothing: "tag_mismatch", "not_json", "nonce_mismatch", "expired",
	 * "refused", "http_<status>", "http_error", "rate_limited" or "bad_response". */
	type Reason = string;

	/** A decoded JSON value. */
	type Json = unknown;

	/** One instance of an /update build (docs/instances.md). */
	interface Node {
		ClassName: string;
		Name: string;
		Id?: string;
		Properties: Record<string, Json>;
		Children: Array<Node>;
	}

	/** (url, JSON body) -> (transport ok, HTTP status, response body) */
	type HttpPost = (url: string, body: string) => LuaTuple<[boolean, number, string]>;
	/** url -> (transport ok, HTTP status, response body): fetching an update file */
	type HttpGet = (url: string) => LuaTuple<[boolean, number, string]>;

	interface Config {
		runtimeUrl: string;
		productId: string;
		licenseKey: string;
		userId?: string | number;
		gameId?: string | number;
		http?: HttpPost;
		httpGet?: HttpGet;
		jsonEncode?: (value: Json) => string;
		jsonDecode?: (text: string) => Json;
		newNonce?: () => string;
		now?: () => number;
		sleep?: (seconds: number) => void;
		retries?: number;
		maxPerMinute?: number;
		/** false: never ask /update for a file (docs/runtime.md, "Updates as files"). */
		fileUpdates?: boolean;
	}

	interface VersionInfo {
		latest?: string;
		update?: boolean;
		fileId?: string;
	}

	interface Build {
		version?: string;
		instances: Array<Node>;
	}

	interface Client {
		readonly runtimeUrl: string;
		readonly productId: string;
		readonly licenseKey: string;
		readonly userId?: string | number;
		readonly gameId?: string | number;
		readonly retries: number;
		readonly maxPerMinute: number;
		readonly version?: VersionInfo;
		readonly build?: Build;
		/** /check: unsealed, forgeable; cached per user for the server's lifetime. */
		check(userId?: string | number): boolean;
		/** /unlock: the seller's data from a verified, sealed answer. */
		unlock(userId?: string | number): LuaTuple<[Json, Reason | undefined]>;
		/** /version, fetched once per server start. */
		latestVersion(current?: string, userId?: string | number): LuaTuple<[VersionInfo | undefined, Reason | undefined]>;
		/** /update: the verified build's nodes; on failure `build` is left as it was. */
		update(current?: string, userId?: string | number): LuaTuple<[Array<Node> | undefined, Reason | undefined]>;
		/** /verify-source: unsealed; raises the server's alert for a modified copy. */
		verifySource(scriptName: string, source: string, userId?: string | number): boolean;
	}

	/** A key's HMAC state: its pads, and on the pure Luau path the pads absorbed once. */
	interface HmacKey {
		ipad: buffer;
		opad: buffer;
		inner: Array<number>;
		outer: Array<number>;
	}

	/** The Roblox constructors buildInstances uses; pass one only outside Roblox. */
	type RobloxEnv = Record<string, unknown>;

	/** How one licore product is sold by the hub kit (docs/selling.md). */
	interface HubCatalogEntry {
		developerProduct?: number;
		/** More developer products, each selling one of the product's plans: id -> plan id. */
		plans?: Record<number, string>;
		gamePass?: number;
		subscription?: string;
		/** Term per period where the engine cannot say when the period ends; 31. */
		subscriptionDays?: number;
	}

	interface HubConfig {
		/** The licore service, e.g. "https://licore.example.com". */
		apiUrl: string;
		/** The name of the Roblox Secret holding the studio key. */
		secretName: string;
		/** licore product id -> how it is sold. */
		catalog: Record<string, HubCatalogEntry>;
		maxPerMinute?: number;
		maxQueueWait?: number;
		retries?: number;
		backoff?: number;
		maxBackoff?: number;
		log?: (message: string) => void;
		/** Receipts of developer products outside the catalog; true acknowledges one. */
		otherReceipt?: (receipt: ReceiptInfo) => boolean;
		/** A buyer paid for a product they already hold (the receipt is acknowledged). */
		alreadyOwned?: (userId: number, productId: string, receipt: ReceiptInfo) => void;
	}

	type HubOutcome = "granted" | "owned" | "revoked" | "retry" | "refused";

	interface Hub {
		readonly receiptMode?: "BindReceiptHandler" | "ProcessReceipt";
		readonly provenance: boolean;
		start(): Hub;
		handleReceipt(receipt: ReceiptInfo): boolean;
		syncPlayer(player: Player): void;
		syncGamePass(player: Player, gamePassId: number): HubOutcome | undefined;
		syncSubscription(player: Player, subscriptionId: string): HubOutcome | undefined;
	}

	interface HubModule {
		new: (config: HubConfig) => Hub;
	}
}

interface LicoreConstructor {
	readonly VERSION: string;
	/** true where SHA-256 runs through EncodingService (native code), false in pure Luau. */
	readonly nativeHashing: boolean;
	/** The hub kit (docs/selling.md); undefined where the package has no Hub child. */
	readonly Hub: Licore.HubModule | undefined;
	/** `new Licore(config)` compiles to `Licore.new(config)`. */
	new (config: Licore.Config): Licore.Client;
	/** Verified nodes -> unparented instances, and the "Path.Property: reason" list of what
	 * could not be set. */
	readonly buildInstances: (
		nodes: Array<Licore.Node>,
		env?: Licore.RobloxEnv,
	) => LuaTuple<[Array<Instance>, Array<string>]>;
	readonly verifyPayload: (
		licenseKey: string,
		nonce: string,
		cipherHex: string,
		tagHex: string,
		now: number,
		exp?: number,
		decode?: (text: string) => Licore.Json,
	) => LuaTuple<[Record<string, Licore.Json> | undefined, Licore.Reason | undefined]>;
	readonly openSealed: (
		licenseKey: string,
		nonce: string,
		cipherHex: string,
		tagHex: string,
	) => LuaTuple<[string | undefined, Licore.Reason | undefined]>;
	readonly sha256: (message: string) => string;
	readonly hmacSha256: (key: string, message: string) => string;
	readonly hmacKey: (key: string) => Licore.HmacKey;
	readonly hmacWith: (key: Licore.HmacKey, message: string) => string;
	readonly toHex: (raw: string) => string;
	readonly fromHex: (hex: string) => string | undefined;
	readonly constantTimeEqual: (a: string, b: string) => boolean;
	readonly jsonEncode: (value: Licore.Json) => string;
	readonly jsonDecode: (text: string) => Licore.Json;
	readonly base64Decode: (text: string) => string;
}

declare const Licore: LicoreConstructor;
export = Licore;
