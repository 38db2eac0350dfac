import Licore from "@rbxts/licore";

const client: Licore.Client = new Licore({
	runtimeUrl: "https://licore.example.com/runtime",
	productId: "prod_123",
	licenseKey: "LICORE_LICENSE_KEY",
	userId: game.CreatorId,
	gameId: game.PlaceId,
});

const [data, reason] = client.unlock();
if (data === undefined) {
	warn(`locked: ${reason}`);
} else {
	const [info] = client.latestVersion("1.0");
	if (info?.update) {
		const [nodes, why] = client.update("1.0");
		if (nodes) {
			const [built, skipped] = Licore.buildInstances(nodes);
			for (const line of skipped) warn(line);
			for (const inst of built) inst.Parent = game.GetService("ServerStorage");
		} else {
			warn(`update refused: ${why}`);
		}
	}
}
const licensed: boolean = client.check(42);
const digest: string = Licore.toHex(Licore.sha256("abc"));
print(Licore.VERSION, licensed, digest);
